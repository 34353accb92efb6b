import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import type { TestServer } from '../helpers/server.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * An Idempotency-Key across processes (issue 24, "idempotency shared"), on PostgreSQL: two
 * servers on one database, as two processes behind a proxy are. The key's claim, the write and
 * the kept answer commit together in the database, so a retry replays the first answer
 * whichever process it reaches, a key sent to both at once runs once (the second claim waits
 * for the first to commit, then replays its answer), and nothing is ever written twice.
 */
const test = twoServerSuite('an Idempotency-Key replays the same answer on every process');

type Agent = { agent_id: string; api_token: string };

/** An answer as the caller saw it: status, the headers that matter, and the body's exact text. */
interface Seen {
  status: number;
  replayed: boolean;
  contentType: string | null;
  body: string;
}

async function seen(response: Response): Promise<Seen> {
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    contentType: response.headers.get('content-type'),
    body: await response.text(),
  };
}

function createWorkspace(server: TestServer, agent: Agent, key: string, name: string) {
  return fetch(server.url('/workspaces'), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${agent.api_token}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify({ name }),
  }).then(seen);
}

function putFile(server: TestServer, agent: Agent, path: string, bytes: string, key: string) {
  return fetch(server.url(path), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}`, 'idempotency-key': key },
    body: Buffer.from(bytes),
  }).then(seen);
}

/** The caller's workspaces, as B lists them. */
async function workspaceNames(server: TestServer, agent: Agent): Promise<string[]> {
  const response = await server.get('/workspaces', agent.api_token);
  assert.is(response.status, 200);
  const body = (await response.json()) as { name: string }[] | { workspaces: { name: string }[] };
  return (Array.isArray(body) ? body : body.workspaces).map((workspace) => workspace.name).sort();
}

async function versionsOf(server: TestServer, workspaceId: string, path: string) {
  const [row] = await server.services.driver.query<{ n: number }>(
    'select count(*)::int8 as n from file_versions where workspace_id = $1 and path = $2',
    [workspaceId, path],
  );
  return Number(row?.n);
}

/** The first answer, and the replay: the same status, type and bytes, marked as a replay. */
function assertReplayOf(replay: Seen, first: Seen): void {
  assert.is(first.replayed, false, 'the first answer is no replay');
  assert.is(replay.replayed, true, 'the second answer says it is a replay');
  assert.is(replay.status, first.status);
  assert.is(replay.contentType, first.contentType);
  assert.is(replay.body, first.body, 'byte for byte');
}

test('a workspace created on A with a key is replayed byte for byte by B: one workspace', async ({
  a,
  b,
}) => {
  const agent = await a.signUp('retrier');
  const key = randomUUID();
  const first = await createWorkspace(a, agent, key, 'once');
  assert.is(first.status, 201);
  assertReplayOf(await createWorkspace(b, agent, key, 'once'), first);
  assert.equal(await workspaceNames(b, agent), ['once']);
});

test('a file saved on A with a key is replayed by B: version 1 only', async ({ a, b }) => {
  const agent = await a.signUp('saver');
  const workspaceId = await newWorkspace(a, agent);
  const path = `/workspaces/${workspaceId}/files/notes/once.txt`;
  const key = randomUUID();
  const first = await putFile(a, agent, path, 'saved once', key);
  assert.is(first.status, 201);
  assertReplayOf(await putFile(b, agent, path, 'saved once', key), first);
  assert.is(await versionsOf(b, workspaceId, 'notes/once.txt'), 1);
});

test('a key sent to A and B at once runs once: the other waits for it and replays it', async ({
  a,
  b,
}) => {
  const agent = await a.signUp('impatient');
  // Several rounds: whichever process claims first, the other replays its answer.
  const names: string[] = [];
  for (let round = 0; round < 5; round++) {
    const key = randomUUID();
    const name = `at once ${round}`;
    names.push(name);
    const answers = await Promise.all([
      createWorkspace(a, agent, key, name),
      createWorkspace(b, agent, key, name),
    ]);
    const ran = answers.filter((answer) => !answer.replayed);
    assert.is(ran.length, 1, 'exactly one of the two ran');
    assert.is(ran[0]!.status, 201);
    assertReplayOf(
      answers.find((answer) => answer.replayed)!,
      ran[0]!,
    );
  }
  assert.equal(await workspaceNames(a, agent), names.sort());
});

test('a file PUT sent to A and B at once with one key makes one version', async ({ a, b }) => {
  const agent = await a.signUp('twice at once');
  const workspaceId = await newWorkspace(a, agent);
  for (let round = 0; round < 3; round++) {
    const path = `/workspaces/${workspaceId}/files/race/${round}.txt`;
    const key = randomUUID();
    const answers = await Promise.all([
      putFile(a, agent, path, `round ${round}`, key),
      putFile(b, agent, path, `round ${round}`, key),
    ]);
    const ran = answers.filter((answer) => !answer.replayed);
    assert.is(ran.length, 1, 'exactly one of the two ran');
    assertReplayOf(
      answers.find((answer) => answer.replayed)!,
      ran[0]!,
    );
    assert.is(await versionsOf(a, workspaceId, `race/${round}.txt`), 1);
  }
});

test('a key reused on B with another body answers 422 idempotency_key_reused, writing nothing', async ({
  a,
  b,
}) => {
  const agent = await a.signUp('forgetful');
  const key = randomUUID();
  assert.is((await createWorkspace(a, agent, key, 'first')).status, 201);
  const reused = await createWorkspace(b, agent, key, 'second');
  assert.is(reused.status, 422);
  assert.is(reused.contentType, 'application/problem+json');
  assert.is((JSON.parse(reused.body) as { code: string }).code, 'idempotency_key_reused');
  assert.equal(await workspaceNames(b, agent), ['first']);

  const workspaceId = await newWorkspace(a, agent);
  const path = `/workspaces/${workspaceId}/files/kept.txt`;
  const fileKey = randomUUID();
  assert.is((await putFile(a, agent, path, 'the first bytes', fileKey)).status, 201);
  const otherBytes = await putFile(b, agent, path, 'other bytes', fileKey);
  assert.is(otherBytes.status, 422);
  assert.is((JSON.parse(otherBytes.body) as { code: string }).code, 'idempotency_key_reused');
  assert.is(await versionsOf(b, workspaceId, 'kept.txt'), 1);
  const read = await b.get(`${path}`, agent.api_token);
  assert.is(await read.text(), 'the first bytes');
});

test.run();
