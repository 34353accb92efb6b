import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestClock } from '../helpers/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A JSON-RPC batch is many requests in one POST: each counts against the limits as one. */
const test = suite<{ server: TestServer; clock: TestClock; token: string }>(
  'JSON-RPC batches at /mcp count every call against the rate limits',
);

const LIMIT = 30;

test.before(async (context) => {
  // Time stands still unless a test moves it: the bucket refills only when told to.
  context.clock = new TestClock();
  context.server = await startTestServer({ rateLimitPerMinute: LIMIT, clock: context.clock });
  context.token = (await context.server.signUp('batcher')).api_token;
});
test.after(async ({ server }) => {
  await server.close();
});

/** A full bucket: a minute is the whole window. */
test.before.each(({ clock }) => clock.advance(60_000));

type RpcAnswer = {
  id: number;
  result?: { isError?: boolean; structuredContent?: { name?: string } };
  error?: { code: number; message: string; data?: { code?: string; retry_after_seconds?: number } };
};

const whoami = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'whoami', arguments: {} },
});

function postMcp(server: TestServer, token: string, body: unknown) {
  return fetch(server.url('/mcp'), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(body),
  });
}

test('calls of a batch past the allowance are refused one by one with rate_limited and Retry-After', async ({
  server,
  token,
}) => {
  const batch = Array.from({ length: 40 }, (_, index) => whoami(index + 1));
  const response = await postMcp(server, token, batch);
  assert.is(response.status, 200);
  const answers = (await response.json()) as RpcAnswer[];
  assert.is(answers.length, 40, 'every request of the batch is answered');
  const served = answers.filter((answer) => answer.result?.structuredContent?.name === 'batcher');
  const refused = answers.filter((answer) => answer.error?.data?.code === 'rate_limited');
  // The POST itself is the first of the 30 a minute; each further call costs one more.
  assert.is(served.length, LIMIT);
  assert.is(refused.length, 40 - LIMIT);
  assert.equal(
    served.map((answer) => answer.id),
    Array.from({ length: LIMIT }, (_, index) => index + 1),
    'the first calls are served, in order',
  );
  for (const answer of refused) {
    assert.ok((answer.error?.data?.retry_after_seconds ?? 0) >= 1);
    assert.match(answer.error?.message ?? '', /Too many requests/);
  }
  assert.is(response.headers.get('ratelimit-remaining'), '0');
  assert.ok(Number(response.headers.get('retry-after')) >= 1);
  // The allowance is spent for every door of the address.
  assert.is((await server.get('/whoami', token)).status, 429);
});

test('a batch costs what its calls cost one by one: batches of 20 and 10 spend a limit of 30', async ({
  server,
  token,
}) => {
  for (const size of [20, 10]) {
    const answers = (await (
      await postMcp(
        server,
        token,
        Array.from({ length: size }, (_, index) => whoami(index + 1)),
      )
    ).json()) as RpcAnswer[];
    assert.ok(answers.every((answer) => answer.result !== undefined));
  }
  const refused = await postMcp(server, token, whoami(99));
  assert.is(refused.status, 429);
});

test('a batch of more than 100 messages is refused whole with 400 invalid_input', async ({
  server,
  token,
}) => {
  const batch = Array.from({ length: 101 }, (_, index) => ({
    jsonrpc: '2.0',
    id: index + 1,
    method: 'ping',
  }));
  const response = await postMcp(server, token, batch);
  assert.is(response.status, 400);
  const answer = (await response.json()) as RpcAnswer;
  assert.is(answer.error?.data?.code, 'invalid_input');
  assert.match(answer.error?.message ?? '', /at most 100/);
  // Refused unread: it cost one request, not 101.
  assert.is(response.headers.get('ratelimit-remaining'), String(LIMIT - 1));
});

test('two requests of a batch may not share an id', async ({ server, token }) => {
  const response = await postMcp(server, token, [whoami(7), whoami(7)]);
  assert.is(response.status, 400);
  assert.is(((await response.json()) as RpcAnswer).error?.code, -32600);
});

test.run();
