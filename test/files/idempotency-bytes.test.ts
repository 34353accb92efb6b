import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { heard } from '../helpers/changes.ts';
import { sha256 } from '../helpers/digests.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/** `Idempotency-Key` on `PUT /workspaces/<id>/files/<path>`: the body counts by its sha256. */
const test = suite<{ server: TestServer }>('Idempotency-Key on a file PUT');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

type Agent = { agent_id: string; api_token: string };

function put(
  server: TestServer,
  agent: Agent,
  path: string,
  body: Uint8Array<ArrayBuffer>,
  key: string,
) {
  return fetch(server.url(path), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}`, 'idempotency-key': key },
    body,
  });
}

async function count(server: TestServer, sql: string, params: unknown[]): Promise<number> {
  const [row] = await server.services.driver.query<{ n: number }>(sql, params);
  return Number(row?.n);
}

const versionsOf = (server: TestServer, workspaceId: string, path: string) =>
  count(
    server,
    'select count(*)::int8 as n from file_versions where workspace_id = $1 and path = $2',
    [workspaceId, path],
  );

const reservationsOf = (server: TestServer, agent: Agent) =>
  count(server, 'select count(*)::int8 as n from upload_reservations where agent_id = $1', [
    agent.agent_id,
  ]);

/** Whether the blob store holds these bytes. */
async function stored(server: TestServer, bytes: Uint8Array<ArrayBuffer>): Promise<boolean> {
  return (await server.services.files.blobs.stat(sha256(bytes))) !== null;
}

test('the same key and bytes again replay the first receipt: version 1 only, one file.saved', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const path = `/workspaces/${workspaceId}/files/notes/plan.txt`;
  const bytes = Buffer.from('the plan, once');
  const key = randomUUID();
  const first = await put(server, agent, path, bytes, key);
  const again = await put(server, agent, path, bytes, key);
  assert.is(first.status, 201);
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  const [firstBody, againBody] = (await Promise.all([first.json(), again.json()])) as {
    receipt: { version: number; sha256: string };
  }[];
  assert.equal(againBody, firstBody);
  assert.is(firstBody?.receipt.version, 1);
  assert.is(firstBody?.receipt.sha256, sha256(bytes));
  assert.is(await versionsOf(server, workspaceId, 'notes/plan.txt'), 1);
  assert.is((await heard(server, agent, 'file.saved')).length, 1);
  assert.is(await reservationsOf(server, agent), 0, 'no quota is left reserved');
  // Without the key the same bytes make version 2, as ever.
  const plain = await fetch(server.url(path), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body: bytes,
  });
  assert.is(((await plain.json()) as { receipt: { version: number } }).receipt.version, 2);
});

test('the same key with other bytes or another path is refused with idempotency_key_reused, and nothing of it is kept', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const path = `/workspaces/${workspaceId}/files/a.txt`;
  const key = randomUUID();
  assert.is((await put(server, agent, path, Buffer.from('first bytes'), key)).status, 201);
  const other = Buffer.from(`other bytes ${key}`);
  for (const [target, body] of [
    [path, other],
    [`/workspaces/${workspaceId}/files/b.txt`, Buffer.from('first bytes')],
  ] as const) {
    const refused = await put(server, agent, target, body, key);
    const problem = (await refused.json()) as { code: string };
    assert.is(refused.status, 422, target);
    assert.is(problem.code, 'idempotency_key_reused', target);
  }
  assert.is(await stored(server, other), false, 'the refused bytes were never stored');
  assert.is(await versionsOf(server, workspaceId, 'a.txt'), 1);
  assert.is(await versionsOf(server, workspaceId, 'b.txt'), 0);
  assert.is(await reservationsOf(server, agent), 0);
  assert.is((await heard(server, agent, 'file.saved')).length, 1);
});

test('six PUTs with one key at once make one version, and each answers its receipt', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const path = `/workspaces/${workspaceId}/files/race.bin`;
  // Large enough that the uploads stream side by side.
  const bytes = Buffer.alloc(512 * 1024, randomUUID());
  const key = randomUUID();
  const answers = await Promise.all(
    Array.from({ length: 6 }, () => put(server, agent, path, bytes, key)),
  );
  const bodies = await Promise.all(answers.map((answer) => answer.text()));
  assert.equal(
    answers.map((answer) => answer.status),
    Array(6).fill(201),
    bodies.join('\n'),
  );
  assert.is(new Set(bodies).size, 1, 'one receipt, replayed to all');
  assert.is(await versionsOf(server, workspaceId, 'race.bin'), 1);
  assert.is((await heard(server, agent, 'file.saved')).length, 1);
  assert.is(await reservationsOf(server, agent), 0, 'no quota is left reserved');
  assert.is(await stored(server, bytes), true);
});

test('two PUTs with one key and different bytes at once: one is saved, the other refused, its bytes not kept', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const path = `/workspaces/${workspaceId}/files/race.bin`;
  const one = Buffer.alloc(512 * 1024, `one ${randomUUID()}`);
  const two = Buffer.alloc(512 * 1024, `two ${randomUUID()}`);
  const key = randomUUID();
  const answers = await Promise.all([
    put(server, agent, path, one, key),
    put(server, agent, path, two, key),
  ]);
  const statuses = answers.map((answer) => answer.status).sort();
  assert.equal(statuses, [201, 422]);
  const saved = answers[0]?.status === 201 ? one : two;
  const refused = saved === one ? two : one;
  assert.is(await versionsOf(server, workspaceId, 'race.bin'), 1);
  assert.is(await stored(server, saved), true);
  assert.is(await stored(server, refused), false, 'no stray blob');
  assert.is(await reservationsOf(server, agent), 0, 'no quota is left reserved');
});

test('a malformed key on a file PUT is refused before anything is stored', async ({ server }) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const bytes = Buffer.from(`never stored ${randomUUID()}`);
  const refused = await put(server, agent, `/workspaces/${workspaceId}/files/x.txt`, bytes, 'a b');
  const problem = (await refused.json()) as { code: string; field: string };
  assert.is(refused.status, 400);
  assert.equal([problem.code, problem.field], ['invalid_input', 'Idempotency-Key']);
  assert.is(await stored(server, bytes), false);
});

test.run();
