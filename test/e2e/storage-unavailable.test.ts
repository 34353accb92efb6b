import * as assert from 'uvu/assert';
import { healthOnceDegraded } from '../helpers/health.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { eventually } from '../helpers/turns.ts';
import { TcpProxy } from '../storage/tcp-proxy.ts';

/**
 * PostgreSQL going away under a running service, as a new operator would meet it (a crash, a
 * restart): writes answer 503 storage_unavailable with Retry-After, not 500; /health says
 * degraded so a load balancer stops sending traffic; and the service recovers by itself.
 */
const test = postgresSuite<{ proxy: TcpProxy; server: TestServer }>(
  'the service while its database is unreachable',
);

test.before(async (context) => {
  const url = await freshDatabaseUrl();
  const target = new URL(url);
  context.proxy = await TcpProxy.start(target.hostname, Number(target.port));
  context.server = await startTestServer({ databaseUrl: context.proxy.rewrite(url) });
});
test.after(async ({ proxy, server }) => {
  await proxy.up().catch(() => undefined);
  await server.close();
  await proxy.down();
});

test('writes answer 503 storage_unavailable and /health degraded; both recover on their own', async ({
  proxy,
  server,
}) => {
  const agent = await server.signUp();
  const note = { message: 'while down', category: 'other' };
  assert.is((await server.get('/health')).status, 200);

  await proxy.down();
  const refused = await server.post('/feedback', note, agent.api_token);
  assert.is(refused.status, 503);
  assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After says when to retry');
  const problem = (await refused.json()) as { code: string; detail: string };
  assert.is(problem.code, 'storage_unavailable');
  assert.not.match(problem.detail, /postgres|127\.0\.0\.1|ECONN/i, 'no internals in the answer');
  const health = await healthOnceDegraded(server);
  assert.equal(
    { ...((await health.json()) as Record<string, unknown>), service_version: undefined },
    {
      status: 'degraded',
      database: 'unreachable',
      service_version: undefined,
      smtp_port: server.smtpPort,
    },
  );
  const signUp = await server.post('/agents', { name: 'while down' });
  assert.is(signUp.status, 503);

  await proxy.up();
  await eventually('health recovers', async () => (await server.get('/health')).status === 200);
  await eventually(
    'writes work again',
    async () => (await server.post('/feedback', note, agent.api_token)).status === 202,
  );
  const changes = (await (await server.get('/changes', agent.api_token)).json()) as {
    changes: { type: string }[];
  };
  assert.equal(
    changes.changes.map((change) => change.type),
    ['agent.welcome', 'feedback.received'],
    'the refused write left nothing behind; the one after recovery is there once',
  );
});

test.run();
