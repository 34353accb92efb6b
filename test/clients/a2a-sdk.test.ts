import { ClientFactory, DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { connectMcp } from '../helpers/clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The service's and its agents' A2A cards as the A2A JavaScript SDK (`@a2a-js/sdk`) takes them:
 * its resolver reads every card the service serves, and its client factory refuses them the
 * documented way (no A2A binding it speaks), since the service has no A2A endpoint yet; the
 * card says so itself, and the MCP binding it names is the MCP version /mcp negotiates.
 */
const test = suite<{ server: TestServer; agentId: string }>(
  'A2A clients: @a2a-js/sdk reads the cards and finds no A2A transport, as the cards say',
);

/** The bindings A2A itself defines (specification 5): a card listing none has no A2A endpoint. */
const A2A_BINDINGS = ['JSONRPC', 'GRPC', 'HTTP+JSON'];

/** Every operation that answers an A2A AgentCard, from the operation table. */
const CARD_OPERATIONS = OPERATION_LIST.filter(
  (operation) => z.globalRegistry.get(operation.output)?.id === 'AgentCard',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.agentId = (await context.server.signUp('a2a-card-agent')).agent_id;
});
test.after(async ({ server }) => {
  await server.close();
});

/** The path of a card operation, its parameters filled in (a new parameter fails here). */
function cardPath(path: string, agentId: string): string {
  return path.replace(/:([a-z_]+)/g, (_, name: string) => {
    if (name === 'agent_id') return agentId;
    throw new Error(`a card path with a parameter this test cannot fill: ${path}`);
  });
}

test('the operation table has the two A2A cards', () => {
  assert.equal(
    CARD_OPERATIONS.map((operation) => operation.name),
    ['get_service_card', 'get_agent_card'],
  );
});

test('the resolver reads every card, and the client factory refuses each with its documented "No compatible transport found"', async ({
  server,
  agentId,
}) => {
  const resolver = new DefaultAgentCardResolver();
  const factory = new ClientFactory();
  for (const operation of CARD_OPERATIONS) {
    const path = cardPath(operation.path, agentId);
    const card = await resolver.resolve(server.url('/'), path);
    assert.ok(card.name, path);
    assert.ok(card.supportedInterfaces.length > 0, path);
    assert.not.ok(
      card.supportedInterfaces.some((i) => A2A_BINDINGS.includes(i.protocolBinding.toUpperCase())),
      `${path} lists no A2A binding`,
    );
    try {
      await factory.createFromUrl(server.url('/'), path);
      assert.unreachable(`${path}: a client was made`);
    } catch (error) {
      assert.match((error as Error).message, /^No compatible transport found/, path);
    }
  }
});

test('each card says in capabilities.extensions that there is no A2A endpoint yet, and where to go instead', async ({
  server,
  agentId,
}) => {
  const resolver = new DefaultAgentCardResolver();
  for (const operation of CARD_OPERATIONS) {
    const path = cardPath(operation.path, agentId);
    const card = await resolver.resolve(server.url('/'), path);
    const extensions = card.capabilities?.extensions ?? [];
    // An agent's card adds its presence (protocol.md "Presence"); the service's has none.
    const agentCard = operation.name === 'get_agent_card';
    assert.is(extensions.length, agentCard ? 2 : 1, path);
    const [extension, presence] = extensions;
    if (agentCard) {
      assert.match(presence!.uri, /\/protocol#presence$/, path);
      assert.equal(Object.keys(presence!.params ?? {}), ['presence', 'responsiveness'], path);
    }
    assert.match(extension!.description, /no A2A endpoint/, path);
    assert.is(extension!.required, false, path);
    assert.equal(extension!.params?.a2aBindings, [], path);
    assert.is(
      (extension!.params?.mcp as { url: string }).url,
      card.supportedInterfaces[0]?.url,
      path,
    );
  }
});

test('the MCP binding names the MCP version /mcp negotiates with the MCP SDK client', async ({
  server,
}) => {
  const card = await new DefaultAgentCardResolver().resolve(server.url('/'));
  const mcp = card.supportedInterfaces.find((i) => i.url === server.url('/mcp'));
  assert.ok(mcp, 'the card lists /mcp');
  const named = /\/specification\/([0-9-]+)\//.exec(mcp.protocolBinding)?.[1];
  const client = await connectMcp(server, undefined, 'a2a-card-check');
  try {
    const negotiated = (client.transport as StreamableHTTPClientTransport).protocolVersion;
    assert.ok(negotiated, 'a version was negotiated');
    assert.is(named, negotiated);
  } finally {
    await client.close();
  }
});

test.run();
