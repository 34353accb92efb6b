import { request as httpRequest } from 'node:http';
import * as assert from 'uvu/assert';
import { TestClock } from '../helpers/clock.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';
import type { Receipt } from '../helpers/wire-types.ts';

/**
 * `Last-Modified` and the date conditions (`If-Modified-Since`, `If-Unmodified-Since`) on file
 * reads and writes over REST, on a clock the test moves: a version's Last-Modified is its
 * saved_at to the second, a read answers 304 or 412 by it, and a write whose condition does not
 * hold answers 412 precondition_failed and changes nothing.
 */
const test = serverSuite('Last-Modified and date conditions on files', () => {
  const clock = new TestClock();
  return { extra: { clock }, config: { clock } };
});

/** The HTTP-date of a receipt's saved_at: its second, as IMF-fixdate. */
const dateOf = (receipt: Receipt) => new Date(String(receipt.saved_at)).toUTCString();
const secondsFrom = (date: string, seconds: number) =>
  new Date(Date.parse(date) + seconds * 1000).toUTCString();

function send(
  server: TestServer,
  agent: TestAgent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
) {
  return fetch(server.url(path), {
    method,
    headers: { authorization: `Bearer ${agent.api_token}`, ...headers },
    ...(body === undefined ? {} : { body }),
  });
}

/** A workspace with `notes.txt` saved at a moment with milliseconds. */
async function savedFile(server: TestServer, clock: TestClock) {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  // To half past a second: its Last-Modified is the second before the save.
  clock.advance(1500 - (clock.now() % 1000));
  const receipt = await saveFile(server, agent, id, 'notes.txt', 'first words');
  assert.ok(!String(receipt.saved_at).endsWith('.000Z'), 'saved within a second');
  return { agent, id, receipt, path: `/workspaces/${id}/files/notes.txt` };
}

/** What the agent sees of the file: its bytes and version, and the workspace's receipts. */
async function fileState(server: TestServer, agent: TestAgent, id: string) {
  const read = await send(server, agent, 'GET', `/workspaces/${id}/files/notes.txt`, {});
  const files = (await (
    await send(server, agent, 'GET', `/workspaces/${id}/files`, {})
  ).json()) as {
    files: { path: string; version: number }[];
  };
  const receipts = (await (
    await send(server, agent, 'GET', `/workspaces/${id}/receipts`, {})
  ).json()) as { receipts: unknown[] };
  return {
    status: read.status,
    text: await read.text(),
    versions: files.files.map((file) => `${file.path}@${file.version}`),
    receipts: receipts.receipts.length,
  };
}

async function expectPreconditionFailed(response: Response, lastModified: string, what: string) {
  const text = await response.text();
  assert.is(response.status, 412, `${what}: ${text}`);
  assert.is(response.headers.get('content-type'), 'application/problem+json', what);
  const problem = JSON.parse(text) as { code: string; last_modified: string };
  assert.is(problem.code, 'precondition_failed', what);
  assert.is(problem.last_modified, lastModified, what);
}

test('GET and HEAD send Last-Modified, the saved_at of the version to the second', async ({
  server,
  clock,
}) => {
  const { agent, receipt, path } = await savedFile(server, clock);
  for (const method of ['GET', 'HEAD']) {
    const response = await send(server, agent, method, path, {});
    assert.is(response.status, 200, method);
    assert.is(response.headers.get('last-modified'), dateOf(receipt), method);
    assert.match(
      response.headers.get('last-modified') ?? '',
      /^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
    );
    await response.arrayBuffer();
  }
});

test('?version=N sends the Last-Modified of that version, not of the newest', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const first = await saveFile(server, agent, id, 'plan.md', '---\ntitle: one\n---\nfirst');
  clock.advance(3 * 60 * 1000);
  const second = await saveFile(server, agent, id, 'plan.md', '---\ntitle: two\n---\nsecond');
  assert.is.not(dateOf(first), dateOf(second));
  const old = await send(server, agent, 'GET', `/workspaces/${id}/files/plan.md?version=1`, {});
  assert.is(old.status, 200);
  assert.is(old.headers.get('last-modified'), dateOf(first));
  assert.is(await old.text(), '---\ntitle: one\n---\nfirst');
  const newest = await send(server, agent, 'HEAD', `/workspaces/${id}/files/plan.md?version=2`, {});
  assert.is(newest.headers.get('last-modified'), dateOf(second));
  const notModified = await send(
    server,
    agent,
    'GET',
    `/workspaces/${id}/files/plan.md?version=1`,
    {
      'if-modified-since': dateOf(first),
    },
  );
  assert.is(notModified.status, 304, 'judged by the version asked for');
});

test('If-Modified-Since at or after Last-Modified answers 304 with no body; before it, the bytes', async ({
  server,
  clock,
}) => {
  const { agent, receipt, path } = await savedFile(server, clock);
  const lastModified = dateOf(receipt);
  for (const method of ['GET', 'HEAD']) {
    for (const since of [lastModified, secondsFrom(lastModified, 60)]) {
      const response = await send(server, agent, method, path, { 'if-modified-since': since });
      assert.is(response.status, 304, `${method} since ${since}`);
      assert.is(await response.text(), '');
      assert.is(response.headers.get('last-modified'), lastModified);
      assert.is(response.headers.get('etag'), `"${receipt.sha256}"`);
    }
  }
  const earlier = await send(server, agent, 'GET', path, {
    'if-modified-since': secondsFrom(lastModified, -1),
  });
  assert.is(earlier.status, 200);
  assert.is(await earlier.text(), 'first words');
});

test('If-None-Match decides instead of If-Modified-Since when both are sent', async ({
  server,
  clock,
}) => {
  const { agent, receipt, path } = await savedFile(server, clock);
  const other = await send(server, agent, 'GET', path, {
    'if-none-match': '"another"',
    'if-modified-since': dateOf(receipt),
  });
  assert.is(other.status, 200, 'the tag differs, so the bytes come whatever the date says');
  assert.is(await other.text(), 'first words');
});

test('If-Unmodified-Since before Last-Modified answers 412 precondition_failed on GET and HEAD', async ({
  server,
  clock,
}) => {
  const { agent, receipt, path } = await savedFile(server, clock);
  const lastModified = dateOf(receipt);
  const before = secondsFrom(lastModified, -1);
  await expectPreconditionFailed(
    await send(server, agent, 'GET', path, { 'if-unmodified-since': before }),
    lastModified,
    'GET',
  );
  const head = await send(server, agent, 'HEAD', path, { 'if-unmodified-since': before });
  assert.is(head.status, 412);
  const same = await send(server, agent, 'GET', path, { 'if-unmodified-since': lastModified });
  assert.is(same.status, 200, 'the same second holds');
  assert.is(await same.text(), 'first words');
  const range = await send(server, agent, 'GET', path, {
    'if-unmodified-since': lastModified,
    range: 'bytes=0-4',
  });
  assert.is(range.status, 206);
  assert.is(await range.text(), 'first');
});

test('a PUT with an If-Unmodified-Since before the file was saved answers 412 and changes nothing', async ({
  server,
  clock,
}) => {
  const { agent, id, receipt, path } = await savedFile(server, clock);
  const before = await fileState(server, agent, id);
  clock.advance(5000);
  await expectPreconditionFailed(
    await send(
      server,
      agent,
      'PUT',
      path,
      { 'if-unmodified-since': secondsFrom(dateOf(receipt), -1) },
      'overwritten',
    ),
    dateOf(receipt),
    'PUT',
  );
  assert.equal(await fileState(server, agent, id), before, 'the same bytes, version and receipts');
  assert.equal(before.versions, ['notes.txt@1']);
  const whoami = (await (await server.get('/whoami', agent.api_token)).json()) as {
    storage: { used_bytes: number; uploads_in_progress_bytes: number };
  };
  assert.equal(
    [whoami.storage.used_bytes, whoami.storage.uploads_in_progress_bytes],
    ['first words'.length, 0],
    'the refused bytes hold no room',
  );
});

test('a PUT with If-Unmodified-Since at Last-Modified, or If-Modified-Since before it, saves', async ({
  server,
  clock,
}) => {
  const { agent, id, receipt, path } = await savedFile(server, clock);
  clock.advance(2000);
  const held = await send(
    server,
    agent,
    'PUT',
    path,
    { 'if-unmodified-since': dateOf(receipt) },
    'second',
  );
  assert.is(held.status, 201, await held.clone().text());
  const second = ((await held.json()) as { receipt: Receipt }).receipt;
  clock.advance(2000);
  const modified = await send(
    server,
    agent,
    'PUT',
    path,
    { 'if-modified-since': dateOf(receipt) },
    'third',
  );
  assert.is(modified.status, 201, 'saved after that date');
  await expectPreconditionFailed(
    await send(
      server,
      agent,
      'PUT',
      path,
      { 'if-modified-since': secondsFrom(dateOf(second), 10) },
      'x',
    ),
    dateOf(((await modified.json()) as { receipt: Receipt }).receipt),
    'If-Modified-Since after the last save',
  );
  const state = await fileState(server, agent, id);
  assert.equal([state.text, state.versions], ['third', ['notes.txt@3']]);
});

test('a PUT to a path with no file yet ignores the date conditions, as Azure does', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const epoch = 'Thu, 01 Jan 1970 00:00:00 GMT';
  clock.advance(1000);
  const created = await send(
    server,
    agent,
    'PUT',
    `/workspaces/${id}/files/new.txt`,
    {
      'if-unmodified-since': epoch,
    },
    'hello',
  );
  assert.is(created.status, 201);
  const future = await send(
    server,
    agent,
    'PUT',
    `/workspaces/${id}/files/other.txt`,
    {
      'if-modified-since': 'Fri, 01 Jan 2100 00:00:00 GMT',
    },
    'hello',
  );
  assert.is(future.status, 201);
});

test('a date condition that is not an HTTP-date is ignored', async ({ server, clock }) => {
  const { agent, path } = await savedFile(server, clock);
  clock.advance(1000);
  for (const bad of ['yesterday', '2000-01-01T00:00:00Z', '0']) {
    const put = await send(server, agent, 'PUT', path, { 'if-unmodified-since': bad }, bad);
    assert.is(put.status, 201, bad);
    const read = await send(server, agent, 'GET', path, { 'if-modified-since': bad });
    assert.is(read.status, 200, bad);
    assert.is(await read.text(), bad);
  }
});

test('a DELETE with a past If-Unmodified-Since answers 412 and keeps the file; at Last-Modified it deletes', async ({
  server,
  clock,
}) => {
  const { agent, id, receipt, path } = await savedFile(server, clock);
  const before = await fileState(server, agent, id);
  clock.advance(1000);
  await expectPreconditionFailed(
    await send(server, agent, 'DELETE', path, {
      'if-unmodified-since': secondsFrom(dateOf(receipt), -30),
    }),
    dateOf(receipt),
    'DELETE',
  );
  await expectPreconditionFailed(
    await send(server, agent, 'DELETE', path, { 'if-modified-since': dateOf(receipt) }),
    dateOf(receipt),
    'DELETE with If-Modified-Since',
  );
  assert.equal(await fileState(server, agent, id), before, 'still there, no receipt');
  const deleted = await send(server, agent, 'DELETE', path, {
    'if-unmodified-since': dateOf(receipt),
  });
  assert.is(deleted.status, 200, await deleted.clone().text());
  assert.is((await send(server, agent, 'GET', path, {})).status, 404);
});

/** A PUT whose body the test sends in parts (chunked): the request, and its answer to come. */
function openUpload(
  server: TestServer,
  agent: TestAgent,
  path: string,
  headers: Record<string, string>,
) {
  const request = httpRequest(server.url(path), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}`, ...headers },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.on('response', (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
  });
  return { request, answer };
}

test('the condition is judged with the save: a save that lands while the body streams makes it fail', async ({
  server,
  clock,
}) => {
  const { agent, id, receipt, path } = await savedFile(server, clock);
  const slow = openUpload(server, agent, path, { 'if-unmodified-since': dateOf(receipt) });
  slow.request.write('slow ');
  // Wait until the slow body is streaming into the store: its room is held.
  let held = 0;
  for (let look = 0; look < 500 && held === 0; look++) {
    const whoami = (await (await server.get('/whoami', agent.api_token)).json()) as {
      storage: { uploads_in_progress_bytes: number };
    };
    held = whoami.storage.uploads_in_progress_bytes;
  }
  assert.ok(held > 0, 'the slow upload is under way');
  clock.advance(2000);
  await saveFile(server, agent, id, 'notes.txt', 'quick');
  slow.request.end('words');
  const answer = await slow.answer;
  assert.is(answer.status, 412, answer.body);
  assert.is((JSON.parse(answer.body) as { code: string }).code, 'precondition_failed');
  const state = await fileState(server, agent, id);
  assert.equal([state.text, state.versions], ['quick', ['notes.txt@2']]);
});

test.run();
