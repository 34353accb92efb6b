import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { TcpProxy } from '../storage/tcp-proxy.ts';

/**
 * On PostgreSQL the request limit is leased from the database (server/http/rate-limit.ts,
 * SharedRateLimiter). While the database is away no credit can be leased: the process then
 * counts on its own, so what needs no database (a warm whoami) is still served, and still
 * limited, instead of answering 503 once the credit in hand is spent.
 */
const test = postgresSuite<{ proxy: TcpProxy; server: TestServer }>(
  'shared rate limits while the database is away',
);

const LIMIT = 60;

test.before(async (context) => {
  const url = await freshDatabaseUrl();
  const target = new URL(url);
  context.proxy = await TcpProxy.start(target.hostname, Number(target.port));
  context.server = await startTestServer({
    databaseUrl: context.proxy.rewrite(url),
    rateLimitPerMinute: LIMIT,
  });
});
test.after(async ({ proxy, server }) => {
  await proxy.up().catch(() => undefined);
  await server.close();
  await proxy.down();
});

test('with the database away, a warm whoami past the credit in hand is still served, and refused 429 only past the limit', async ({
  proxy,
  server,
}) => {
  const agent = await server.signUp();
  assert.is((await server.get('/whoami', agent.api_token)).status, 200);

  await proxy.down();
  const statuses: number[] = [];
  let refusal: { code?: string } | null = null;
  for (let i = 0; i < LIMIT + 1; i++) {
    const answer = await server.get('/whoami', agent.api_token);
    statuses.push(answer.status);
    if (answer.status !== 200) {
      refusal = (await answer.json()) as { code?: string };
      break;
    }
  }
  assert.ok(
    statuses.filter((status) => status === 200).length >= LIMIT / 2,
    `served from memory while the database is away: ${statuses.join(' ')}`,
  );
  assert.is(statuses.at(-1), 429, `limited still: ${statuses.join(' ')}`);
  assert.is(refusal?.code, 'rate_limited');
});

test.run();
