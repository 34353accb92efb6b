import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { configFromEnv } from '../../server/config.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A service with a public BASE_URL: which browser origins /mcp admits (DNS-rebinding rule). */
const test = suite<{ server: TestServer }>('/mcp origins behind a public BASE_URL');

test.before(async (context) => {
  context.server = await startTestServer({
    baseUrl: 'https://service.example',
    mcpAllowedOrigins: ['https://app.example', 'http://localhost:5173'],
  });
});
test.after(async ({ server }) => {
  await server.close();
});

/** The status of a ping from a page at `origin` (the service listens on loopback all the same). */
async function pingFrom(server: TestServer, origin: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${server.port}/mcp`, {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      origin,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    signal: AbortSignal.timeout(5000),
  });
  await response.arrayBuffer();
  return response.status;
}

test('the origin of BASE_URL and those of MCP_ALLOWED_ORIGINS are admitted', async ({ server }) => {
  for (const origin of [
    'https://service.example',
    'https://SERVICE.example:443',
    'https://app.example',
    'http://localhost:5173',
  ]) {
    assert.is(await pingFrom(server, origin), 200, origin);
  }
});

test('other origins are refused, loopback pages included when BASE_URL is not loopback', async ({
  server,
}) => {
  for (const origin of [
    'http://service.example',
    'https://app.example:8443',
    'https://app.example.evil.example',
    'http://localhost:6274',
    'http://127.0.0.1:3000',
  ]) {
    assert.is(await pingFrom(server, origin), 403, origin);
  }
});

test('MCP_ALLOWED_ORIGINS takes a comma-separated list of origins, or *', () => {
  assert.equal(
    configFromEnv({ MCP_ALLOWED_ORIGINS: 'https://a.example, HTTP://B.example:8080 ,' })
      .mcpAllowedOrigins,
    ['https://a.example', 'http://b.example:8080'],
  );
  assert.equal(configFromEnv({ MCP_ALLOWED_ORIGINS: '*' }).mcpAllowedOrigins, ['*']);
  assert.equal(configFromEnv({}).mcpAllowedOrigins, []);
  for (const bad of ['https://a.example/path', 'a.example', 'null']) {
    assert.throws(() => configFromEnv({ MCP_ALLOWED_ORIGINS: bad }), /MCP_ALLOWED_ORIGINS/, bad);
  }
});

test('with * every origin is admitted', async () => {
  const open = await startTestServer({
    baseUrl: 'https://service.example',
    mcpAllowedOrigins: ['*'],
  });
  try {
    assert.is(await pingFrom(open, 'https://anyone.example'), 200);
  } finally {
    await open.close();
  }
});

test.run();
