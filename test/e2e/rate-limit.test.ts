import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { io as connect, type Socket } from 'socket.io-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestClock } from '../helpers/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { turnsUntil } from '../helpers/turns.ts';

// Time stands still here unless a test moves the clock: buckets refill only when told to.
const test = suite<{ server: TestServer; clock: TestClock }>('request-rate limits per address');

test.before(async (context) => {
  context.clock = new TestClock();
  context.server = await startTestServer({
    rateLimitPerMinute: 30,
    signUpLimitPerHour: 3,
    socketsPerAgent: 2,
    clock: context.clock,
  });
});
test.after(async ({ server }) => {
  await server.close();
});

test('an agent may hold only so many sockets; closing one makes room', async ({ server }) => {
  const agent = await server.signUp();
  const open = (): Socket =>
    connect(server.baseUrl, {
      auth: { token: agent.api_token },
      transports: ['websocket'],
      reconnection: false,
    });
  const connected = (socket: Socket) =>
    new Promise<string>((resolve) => {
      socket.on('connect', () => resolve('connected'));
      socket.on('connect_error', (error: Error & { data?: { code?: string } }) =>
        resolve(error.data?.code ?? 'error'),
      );
    });
  const first = open();
  const second = open();
  assert.equal(await Promise.all([connected(first), connected(second)]), [
    'connected',
    'connected',
  ]);
  const third = open();
  assert.is(await connected(third), 'too_many_connections');
  // The server hears of the disconnect a moment after the client; each socket of the agent
  // listens on the change hub, so the count of listeners shows when it has.
  assert.is(server.services.hub.listenerCount(agent.agent_id), 2);
  first.disconnect();
  await turnsUntil(() => server.services.hub.listenerCount(agent.agent_id) === 1);
  const fourth = open();
  assert.is(await connected(fourth), 'connected');
  fourth.disconnect();
  second.disconnect();
});

test('answers carry RateLimit headers', async ({ server }) => {
  const response = await server.post('/feedback', { message: 'hi', category: 'other' });
  assert.is(response.headers.get('ratelimit-limit'), '30');
  assert.ok(Number(response.headers.get('ratelimit-remaining')) < 30);
  assert.is(response.headers.get('ratelimit-policy'), '30;w=60');
});

test('sign-ups past the per-address limit answer 429 with Retry-After, make no agent, and pass once that time has', async ({
  server,
  clock,
}) => {
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++)
    statuses.push((await server.post('/agents', { name: `limited ${i}` })).status);
  // Three sign-ups an hour; the socket test before this one used the first.
  assert.equal(statuses, [201, 201, 429, 429]);
  const refused = await server.post('/agents', { name: 'limited again' });
  assert.is(refused.status, 429);
  // Three an hour refill one every 20 minutes.
  assert.is(refused.headers.get('retry-after'), '1200');
  const problem = (await refused.json()) as { code: string; retry_after_seconds: number };
  assert.is(problem.code, 'rate_limited');
  assert.is(problem.retry_after_seconds, 1200);
  const [row] = await server.services.driver.query<{ n: number }>(
    "select count(*)::int8 as n from agents where name like 'limited again%'",
  );
  assert.is(row?.n, 0);

  clock.advance(1199_000);
  assert.is((await server.post('/agents', { name: 'limited again' })).status, 429);
  clock.advance(1_000);
  assert.is((await server.post('/agents', { name: 'limited again' })).status, 201);
  assert.is((await server.post('/agents', { name: 'limited once more' })).status, 429);
});

test('sign_up over MCP counts against the same limit', async ({ server }) => {
  const client = new Client({ name: 'limited', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url('/mcp'))));
  const result = (await client.callTool({ name: 'sign_up', arguments: { name: 'via mcp' } })) as {
    isError?: boolean;
    content: { text: string }[];
  };
  await client.close();
  assert.ok(result.isError);
  assert.is((JSON.parse(result.content[0]?.text ?? '{}') as { code: string }).code, 'rate_limited');
});

test('past the general limit every route but the documents answers 429, until Retry-After has passed', async ({
  server,
  clock,
}) => {
  let refused: Response | undefined;
  for (let i = 0; i < 31 && !refused; i++) {
    const response = await server.get('/whoami');
    if (response.status === 429) refused = response;
  }
  assert.ok(refused, 'at most 30 requests a minute are taken');
  assert.is((await server.get('/health')).status, 200);
  assert.is((await server.get('/llms.txt')).status, 200);
  // 30 a minute refill one every 2 s (less, when part of one has refilled already).
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= 2, `Retry-After: ${retryAfter}`);
  clock.advance(retryAfter * 1000);
  assert.is((await server.get('/whoami')).status, 401, 'served again: no token, so 401');
  assert.is((await server.get('/whoami')).status, 429);
});

test.run();
