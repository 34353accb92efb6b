import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { callTool, connectMcp } from '../helpers/clients.ts';
import { jwksOf, verifies, type Jwks } from '../helpers/receipt-chain.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/** get_service_keys: the JWKS at one route, and as an MCP tool. */
const test = suite<{ server: TestServer; client: Client }>('get_service_keys');

test.before(async (context) => {
  context.server = await startTestServer();
  context.client = await connectMcp(context.server, undefined, 'key-reader');
});
test.after(async ({ server, client }) => {
  await client.close();
  await server.close();
});

test('the MCP tool get_service_keys answers the keys GET /.well-known/service-keys.json serves, and a receipt verifies with them', async ({
  server,
  client,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const receipt = await saveFile(server, agent, workspaceId, 'signed.txt', 'signed bytes');
  const overHttp = await jwksOf(server);
  const result = await callTool(client, 'get_service_keys');
  assert.not.ok(result.isError, JSON.stringify(result));
  const overMcp = result.structuredContent as unknown as Jwks;
  assert.equal(overMcp, overHttp);
  assert.ok(overMcp.keys.length >= 1);
  assert.ok(verifies(receipt, overMcp), 'the receipt verifies with the keys from MCP');
  const listed = await client.listTools();
  assert.ok(listed.tools.some((tool) => tool.name === 'get_service_keys'));
});

test('the route keeps its path and answer: JSON, no token, readable from any page', async ({
  server,
}) => {
  const response = await fetch(server.url('/.well-known/service-keys.json'), {
    headers: { origin: 'https://example.org' },
  });
  assert.is(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  assert.is(response.headers.get('access-control-allow-origin'), '*');
  const jwks = (await response.json()) as { keys: (Jwks['keys'][number] & { use: string })[] };
  for (const key of jwks.keys) {
    assert.equal(Object.keys(key).sort(), ['crv', 'kid', 'kty', 'use', 'x']);
    assert.equal([key.kty, key.crv, key.use], ['OKP', 'Ed25519', 'sig']);
  }
  const spec = (await (await fetch(server.url('/openapi.json'))).json()) as {
    paths: Record<string, { get?: { operationId?: string } }>;
  };
  assert.is(spec.paths['/.well-known/service-keys.json']?.get?.operationId, 'get_service_keys');
});

test.run();
