import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AddressRefused, checkedAddress } from '../../actors/webhooks/address-guard.ts';
import { request } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startReceiver, type Receiver } from './webhooks-receivers.ts';

/**
 * No webhook reaches a loopback, private, link-local or metadata address while
 * WEBHOOK_ALLOW_PRIVATE is off (issue 23, "Bad input"): set_webhook refuses such a URL after
 * resolving its host, and a delivery checks every redirect before following it.
 *
 * The redirect case needs a first hop that is allowed and yet runs on this machine. The server
 * is started with `webhookAllowedTargets` naming exactly one loopback `address:port` (a test-only
 * setting, never read from the environment): the redirector there answers 307 to the real
 * loopback receiver on another port, which the guard must refuse at delivery. So the real guard,
 * the real sockets and the real redirect code run; the one exception is a single `ip:port`.
 */

interface Context {
  server: TestServer;
  redirector: Server;
  redirectorPort: number;
  /** Where the redirector sends the next request; set per test. */
  redirectTo: string;
  /** Requests the redirector took, by path (each test's agent has a path of its own). */
  hits: Map<string, number>;
  target: Receiver;
}

const test = suite<Context>('webhooks: no request to private addresses (SSRF)');

test.before(async (context) => {
  context.target = await startReceiver();
  context.hits = new Map();
  context.redirectTo = context.target.url;
  context.redirector = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    context.hits.set(path, (context.hits.get(path) ?? 0) + 1);
    request.resume();
    response.writeHead(307, { location: context.redirectTo }).end();
  });
  await new Promise<void>((resolve) => context.redirector.listen(0, '127.0.0.1', resolve));
  context.redirectorPort = (context.redirector.address() as AddressInfo).port;
  context.server = await startTestServer({
    webhookAllowPrivate: false,
    webhookTimeoutMs: 2000,
    webhookAllowedTargets: [`127.0.0.1:${context.redirectorPort}`],
  });
});

test.after(async ({ server, redirector, target }) => {
  await server.close();
  redirector.closeAllConnections();
  await new Promise((resolve) => redirector.close(resolve));
  await target.close();
});

const REFUSED_URLS = [
  'http://127.0.0.1/hooks',
  'http://127.8.9.10:8080/hooks',
  'http://10.0.0.1/hooks',
  'https://172.20.1.1/hooks',
  'http://192.168.1.1/hooks',
  'http://100.64.0.1/hooks',
  'http://169.254.169.254/latest/meta-data/',
  'http://[::1]/hooks',
  'http://[::ffff:127.0.0.1]/hooks',
  'http://[::ffff:a9fe:a9fe]/hooks',
  'http://[fd00::1]/hooks',
  'http://[fe80::1]/hooks',
  'http://0.0.0.0/hooks',
  'http://224.0.0.1/hooks',
  // Names: resolved first, then every address checked.
  'http://localhost/hooks',
  'https://localhost:8443/hooks',
  // Issue 32 §5: IPv6 forms carrying IPv4, and documentation ranges.
  'http://[::127.0.0.1]/hooks',
  'http://[::ffff:0:7f00:1]/hooks',
  'http://[2002:7f00:1::]/hooks',
  'http://192.0.2.1/hooks',
];

test('set_webhook refuses loopback, private, link-local, metadata and CGNAT addresses, literal or resolved, and writes nothing', async ({
  server,
}) => {
  const agent = await server.signUp();
  for (const url of REFUSED_URLS) {
    const refused = await request(server, 'PUT', '/whoami/webhook', {
      token: agent.api_token,
      body: { url },
    });
    assert.is(refused.status, 422, `${url}: ${JSON.stringify(refused.body)}`);
    assert.is(refused.body.code, 'webhook_url_refused', url);
    assert.match(String(refused.body.detail), /non-public address/);
  }
  const none = await request(server, 'GET', '/whoami/webhook', { token: agent.api_token });
  assert.is(none.status, 404);
});

test('spellings the URL parser would turn into loopback are not URLs set_webhook takes: 400, and nothing written', async ({
  server,
}) => {
  const agent = await server.signUp();
  for (const url of ['http://2130706433/hooks', 'http://0x7f.1/hooks', 'http://127.1/hooks']) {
    const refused = await request(server, 'PUT', '/whoami/webhook', {
      token: agent.api_token,
      body: { url },
    });
    assert.is(refused.status, 400, `${url}: ${JSON.stringify(refused.body)}`);
    assert.is(refused.body.code, 'invalid_input', url);
  }
  const none = await request(server, 'GET', '/whoami/webhook', { token: agent.api_token });
  assert.is(none.status, 404);
});

test('a name that does not resolve is refused too', async ({ server }) => {
  const agent = await server.signUp();
  const refused = await request(server, 'PUT', '/whoami/webhook', {
    token: agent.api_token,
    body: { url: 'https://no-such-host.invalid/hooks' },
  });
  assert.is(refused.status, 422);
  assert.match(String(refused.body.detail), /does not resolve/);
});

for (const [name, to] of [
  ['a loopback address', (c: Context) => c.target.url],
  ['a name resolving to loopback', (c: Context) => `http://localhost:${c.target.port}/hooks`],
  ['the metadata address', () => 'http://169.254.169.254/latest/meta-data/'],
  // Issue 32 §5: forms that carry a loopback IPv4 address, decoded at every hop too.
  ['a 6to4 address carrying loopback', () => 'http://[2002:7f00:1::]/hooks'],
  ['an IPv4-translated loopback address', () => 'http://[::ffff:0:7f00:1]/hooks'],
] as const) {
  test(`a delivery redirected to ${name} is refused at that hop and counts as a failure`, async (context) => {
    const { server, target } = context;
    context.redirectTo = to(context);
    const agent = await server.signUp();
    const set = await request(server, 'PUT', '/whoami/webhook', {
      token: agent.api_token,
      body: { url: `http://127.0.0.1:${context.redirectorPort}/${agent.agent_id}` },
    });
    assert.is(set.status, 200, JSON.stringify(set.body));
    await request(server, 'POST', '/whoami/webhook/test', { token: agent.api_token });
    await server.services.webhookDelivery.idle();
    assert.is(context.hits.get(`/${agent.agent_id}`), 1, 'the first hop was taken');
    assert.is(target.received.length, 0, 'the loopback receiver was never reached');
    const state = await request<{ last_error: string; failing_since: string }>(
      server,
      'GET',
      '/whoami/webhook',
      { token: agent.api_token },
    );
    assert.match(state.body.last_error, /^refused: .*non-public address/);
    assert.ok(state.body.failing_since);
  });
}

test('at most 3 redirects are followed', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  // The redirector sends every hop back to itself.
  const loop = `http://127.0.0.1:${context.redirectorPort}/${agent.agent_id}`;
  context.redirectTo = loop;
  await request(server, 'PUT', '/whoami/webhook', { token: agent.api_token, body: { url: loop } });
  await request(server, 'POST', '/whoami/webhook/test', { token: agent.api_token });
  await server.services.webhookDelivery.idle();
  assert.is(context.hits.get(`/${agent.agent_id}`), 4, 'the first request and 3 redirects');
  const state = await request<{ last_error: string }>(server, 'GET', '/whoami/webhook', {
    token: agent.api_token,
  });
  assert.is(state.body.last_error, 'more than 3 redirects');
});

test('a name with one public and one private address is refused (every address is checked)', async () => {
  const policy = {
    allowPrivate: false,
    resolve: async () => [
      { address: '93.184.215.14', family: 4 as const },
      { address: '10.1.2.3', family: 4 as const },
    ],
  };
  try {
    await checkedAddress(new URL('https://mixed.example/hooks'), policy);
    assert.unreachable('refused');
  } catch (error) {
    assert.instance(error, AddressRefused);
    assert.match((error as Error).message, /mixed\.example resolves to 10\.1\.2\.3/);
  }
  const publicOnly = await checkedAddress(new URL('https://public.example/hooks'), {
    ...policy,
    resolve: async () => [{ address: '93.184.215.14', family: 4 as const }],
  });
  assert.equal(publicOnly, { address: '93.184.215.14', family: 4 });
});

test.run();
