import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/tokens.ts';
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

test('a retried sign-up with the same key replays the first answer and makes one agent', async ({
  server,
}) => {
  const key = randomUUID();
  const name = `retry safe ${key.slice(0, 8)}`;
  const first = await post(server, '/agents', { name }, key);
  const again = await post(server, '/agents', { name }, key);
  assert.is(first.status, 201);
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(await again.json(), await first.json());
  const [row] = await server.services.driver.query<{ n: number }>(
    'select count(*)::int8 as n from agents where name = $1',
    [name],
  );
  assert.is(row?.n, 1);
});

test('the same key sent eight times at once makes one agent, and every answer is that one', async ({
  server,
}) => {
  const key = randomUUID();
  const name = `at once ${key.slice(0, 8)}`;
  const answers = await Promise.all(
    Array.from({ length: 8 }, () => post(server, '/agents', { name }, key)),
  );
  const bodies = await Promise.all(answers.map((answer) => answer.text()));
  assert.equal(
    answers.map((answer) => answer.status),
    Array(8).fill(201),
  );
  assert.is(new Set(bodies).size, 1, 'one answer, replayed to all');
  const [row] = await server.services.driver.query<{ n: number }>(
    'select count(*)::int8 as n from agents where name = $1',
    [name],
  );
  assert.is(row?.n, 1);
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

test('no token is kept in plain text by the replay store', async ({ server }) => {
  const key = randomUUID();
  const { api_token } = (await (
    await post(server, '/agents', { name: 'secret keeper' }, key)
  ).json()) as { api_token: string };
  const rows = await server.services.driver.query<{ response: string }>(
    'select response from idempotency_keys',
  );
  for (const row of rows) {
    assert.not.ok(row.response.includes(api_token));
    assert.not.ok(Buffer.from(row.response, 'base64').toString('latin1').includes(api_token));
  }
});

test('the same key with another body is refused with 422 idempotency_key_reused', async ({
  server,
}) => {
  const key = randomUUID();
  await post(server, '/agents', { name: 'first body' }, key);
  const response = await post(server, '/agents', { name: 'second body' }, key);
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
  const refused = await post(server, '/agents', { name: '' }, key);
  assert.is(refused.status, 400);
  const accepted = await post(server, '/agents', { name: 'fixed name' }, key);
  assert.is(accepted.status, 201);
});

test('a key that is not printable ASCII is refused', async ({ server }) => {
  const response = await post(server, '/agents', { name: 'x' }, 'has space');
  assert.is(response.status, 400);
  assert.is(((await response.json()) as { code: string }).code, 'invalid_input');
});

test.run();
