import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { io as connect, type Socket } from 'socket.io-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ server: TestServer }>('request-rate limits per address');

test.before(async (context) => {
  context.server = await startTestServer({
    rateLimitPerMinute: 30,
    signUpLimitPerHour: 3,
    socketsPerAgent: 2,
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
  const gone = new Promise((resolve) => first.on('disconnect', resolve));
  first.disconnect();
  await gone;
  // The server hears of the disconnect a moment after the client: retry until it has.
  let outcome = 'too_many_connections';
  for (let i = 0; i < 50 && outcome === 'too_many_connections'; i++) {
    const fourth = open();
    outcome = await connected(fourth);
    fourth.disconnect();
  }
  assert.is(outcome, 'connected');
  second.disconnect();
});

test('answers carry RateLimit headers', async ({ server }) => {
  const response = await server.post('/feedback', { message: 'hi', category: 'other' });
  assert.is(response.headers.get('ratelimit-limit'), '30');
  assert.ok(Number(response.headers.get('ratelimit-remaining')) < 30);
  assert.is(response.headers.get('ratelimit-policy'), '30;w=60');
});

test('sign-ups past the per-address limit answer 429 with Retry-After, and make no agent', async ({
  server,
}) => {
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++)
    statuses.push((await server.post('/agents', { name: `limited ${i}` })).status);
  // Three sign-ups an hour; the socket test before this one used the first.
  assert.equal(statuses, [201, 201, 429, 429]);
  const refused = await server.post('/agents', { name: 'limited again' });
  assert.is(refused.status, 429);
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  const problem = (await refused.json()) as { code: string; retry_after_seconds: number };
  assert.is(problem.code, 'rate_limited');
  assert.ok(problem.retry_after_seconds >= 1);
  const [row] = await server.services.driver.query<{ n: number }>(
    "select count(*)::int8 as n from agents where name like 'limited again%'",
  );
  assert.is(row?.n, 0);
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

test('past the general limit every route but the documents answers 429', async ({ server }) => {
  let status = 0;
  for (let i = 0; i < 40 && status !== 429; i++) status = (await server.get('/whoami')).status;
  assert.is(status, 429);
  assert.is((await server.get('/health')).status, 200);
  assert.is((await server.get('/llms.txt')).status, 200);
});

test.run();
