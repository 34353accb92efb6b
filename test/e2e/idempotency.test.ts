import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ server: TestServer }>('Idempotency-Key on writes');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

const post = (server: TestServer, path: string, body: unknown, key: string, token?: string) =>
  fetch(server.url(path), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'idempotency-key': key,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
  });

async function count(server: TestServer, sql: string, params: unknown[] = []): Promise<number> {
  const [row] = await server.services.driver.query<{ n: number }>(sql, params);
  return Number(row?.n);
}

test('a retried write with the same key replays the first answer and acts once', async ({
  server,
}) => {
  const agent = await server.signUp();
  const key = randomUUID();
  const name = `retry safe ${key.slice(0, 8)}`;
  const first = await post(server, '/workspaces', { name }, key, agent.api_token);
  const again = await post(server, '/workspaces', { name }, key, agent.api_token);
  assert.is(first.status, 201);
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(await again.json(), await first.json());
  const made = 'select count(*)::int8 as n from workspaces where name = $1';
  assert.is(await count(server, made, [name]), 1);
});

test('the same key sent eight times at once acts once, and every answer is that one', async ({
  server,
}) => {
  const agent = await server.signUp();
  const key = randomUUID();
  const name = `at once ${key.slice(0, 8)}`;
  const answers = await Promise.all(
    Array.from({ length: 8 }, () => post(server, '/workspaces', { name }, key, agent.api_token)),
  );
  const bodies = await Promise.all(answers.map((answer) => answer.text()));
  assert.equal(
    answers.map((answer) => answer.status),
    Array(8).fill(201),
  );
  assert.is(new Set(bodies).size, 1, 'one answer, replayed to all');
  const made = 'select count(*)::int8 as n from workspaces where name = $1';
  assert.is(await count(server, made, [name]), 1);
});

test('a replayed sign-up never hands out the token: sign-up refuses an Idempotency-Key and keeps nothing', async ({
  server,
}) => {
  const keys = 'select count(*)::int8 as n from idempotency_keys';
  const keptBefore = await count(server, keys);
  const key = randomUUID();
  const name = `replayed ${key.slice(0, 8)}`;
  // Two strangers sending the same key and body: the second must not learn the first's token.
  const first = await post(server, '/agents', { name }, key);
  const second = await post(server, '/agents', { name }, key);
  for (const answer of [first, second]) {
    const problem = (await answer.json()) as { code: string; field: string; api_token?: string };
    assert.is(answer.status, 400);
    assert.equal([problem.code, problem.field], ['invalid_input', 'Idempotency-Key']);
    assert.is(problem.api_token, undefined);
  }
  const made = 'select count(*)::int8 as n from agents where name = $1';
  assert.is(await count(server, made, [name]), 0);
  assert.is(await count(server, keys), keptBefore, 'the replay store kept nothing');
  // Without the header it signs up as ever.
  const plain = await server.post('/agents', { name });
  assert.is(plain.status, 201);
});

test('every operation whose answer holds a secret refuses an Idempotency-Key: invites and storage links too', async ({
  server,
}) => {
  const owner = await server.signUp();
  const workspace = (await (await server.post('/workspaces', {}, owner.api_token)).json()) as {
    workspace_id: string;
  };
  for (const [path, body] of [
    [`/workspaces/${workspace.workspace_id}/invites`, {}],
    [`/workspaces/${workspace.workspace_id}/sas`, { access: 'read' }],
  ] as const) {
    const key = randomUUID();
    const refused = await post(server, path, body, key, owner.api_token);
    assert.is(refused.status, 400, path);
    assert.is(((await refused.json()) as { field: string }).field, 'Idempotency-Key');
    assert.is((await server.post(path, body, owner.api_token)).status < 300, true, path);
  }
  const invites = 'select count(*)::int8 as n from invites where workspace_id = $1';
  assert.is(await count(server, invites, [workspace.workspace_id]), 1);
});

test('a key is claimed in the transaction of its write: a write refused inside it leaves no claim', async () => {
  const operatorToken = newToken();
  const server = await startTestServer({ operatorToken });
  try {
    const key = randomUUID();
    // The refusal comes from inside the command, after the key was claimed in its transaction.
    const refused = await post(
      server,
      '/feedback/6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20/answer',
      { answer: 'to nobody' },
      key,
      operatorToken,
    );
    assert.is(refused.status, 404);
    const [row] = await server.services.driver.query<{ n: number }>(
      'select count(*)::int8 as n from idempotency_keys',
    );
    assert.is(row?.n, 0, 'the claim went with the rolled-back write');
    const agent = await server.signUp();
    const sent = (await (
      await server.post(
        '/feedback',
        { message: 'please answer', category: 'question' },
        agent.api_token,
      )
    ).json()) as { feedback_id: string };
    // The same key for another request is free: nothing was kept under it.
    const answered = await post(
      server,
      `/feedback/${sent.feedback_id}/answer`,
      { answer: 'here' },
      key,
      operatorToken,
    );
    assert.is(answered.status, 201);
    const [after] = await server.services.driver.query<{ n: number; answered: number }>(
      'select count(*)::int8 as n, count(response)::int8 as answered from idempotency_keys',
    );
    assert.equal(
      after,
      { n: 1, answered: 1 },
      'one claim, committed with its write and its answer',
    );
  } finally {
    await server.close();
  }
});

test('the same key with another body is refused with 422 idempotency_key_reused', async ({
  server,
}) => {
  const key = randomUUID();
  await post(server, '/feedback', { message: 'first body', category: 'idea' }, key);
  const response = await post(
    server,
    '/feedback',
    { message: 'second body', category: 'idea' },
    key,
  );
  assert.is(response.status, 422);
  assert.is(((await response.json()) as { code: string }).code, 'idempotency_key_reused');
});

test('keys are scoped to the caller: two agents may use the same key', async ({ server }) => {
  const a = await server.signUp();
  const b = await server.signUp();
  const key = randomUUID();
  const body = { message: 'same words', category: 'idea' };
  const fromA = (await (await post(server, '/feedback', body, key, a.api_token)).json()) as {
    feedback_id: string;
  };
  const fromB = (await (await post(server, '/feedback', body, key, b.api_token)).json()) as {
    feedback_id: string;
  };
  assert.is.not(fromA.feedback_id, fromB.feedback_id);
});

test('a refused request does not use up its key', async ({ server }) => {
  const key = randomUUID();
  const refused = await post(server, '/feedback', { message: '', category: 'idea' }, key);
  assert.is(refused.status, 400);
  const accepted = await post(server, '/feedback', { message: 'fixed', category: 'idea' }, key);
  assert.is(accepted.status, 202);
});

test('a key that is not printable ASCII is refused', async ({ server }) => {
  const response = await post(server, '/feedback', { message: 'x', category: 'idea' }, 'has space');
  assert.is(response.status, 400);
  assert.is(((await response.json()) as { code: string }).code, 'invalid_input');
});

test.run();
