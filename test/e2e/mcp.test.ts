import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ server: TestServer; clients: Client[] }>('MCP at /mcp with the SDK client');

test.before(async (context) => {
  context.server = await startTestServer();
  context.clients = [];
});
test.after(async ({ server, clients }) => {
  for (const client of clients) await client.close();
  await server.close();
});

async function mcpClient(
  context: { server: TestServer; clients: Client[] },
  token?: string,
): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(context.server.url('/mcp')), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  context.clients.push(client);
  return client;
}

type ToolResult = {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
};
const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;
const problemOf = (result: ToolResult) =>
  JSON.parse(result.content[0]?.text ?? '{}') as { code: string; detail: string };

test('tools/list offers every operation of the table, described, with its input schema', async (context) => {
  const client = await mcpClient(context);
  const { tools } = await client.listTools();
  assert.equal(tools.map((t) => t.name).sort(), OPERATION_LIST.map((o) => o.name).sort());
  for (const tool of tools) {
    assert.ok((tool.description ?? '').length > 40, `${tool.name} is described`);
    assert.is(tool.inputSchema.type, 'object');
  }
  const whoami = tools.find((t) => t.name === 'whoami');
  assert.ok(whoami?.inputSchema.properties?.api_token, 'tools that need a token take api_token');
  const signUp = tools.find((t) => t.name === 'sign_up');
  assert.not.ok(signUp?.inputSchema.properties?.api_token, 'sign_up needs no token');
});

test('sign_up over MCP, then whoami with the api_token argument, answers as HTTP does', async (context) => {
  const client = await mcpClient(context);
  const signed = await call(client, 'sign_up', { name: 'mcp agent' });
  assert.not.ok(signed.isError);
  const { api_token, agent_id } = signed.structuredContent as {
    api_token: string;
    agent_id: string;
  };
  const viaMcp = await call(client, 'whoami', { api_token });
  assert.not.ok(viaMcp.isError);
  const viaHttp = await (await context.server.get('/whoami', api_token)).json();
  assert.equal(viaMcp.structuredContent, viaHttp);
  assert.equal(JSON.parse(viaMcp.content[0]?.text ?? ''), viaHttp);
  assert.is((viaHttp as { agent_id: string }).agent_id, agent_id);
});

test('the token may come in the Authorization header instead', async (context) => {
  const agent = await context.server.signUp();
  const client = await mcpClient(context, agent.api_token);
  const result = await call(client, 'whoami');
  assert.is((result.structuredContent as { agent_id: string }).agent_id, agent.agent_id);
});

test('changes and leave_feedback work over MCP and feed the same feed', async (context) => {
  const agent = await context.server.signUp();
  const client = await mcpClient(context, agent.api_token);
  const first = await call(client, 'changes');
  assert.is(
    (first.structuredContent as { changes: { type: string }[] }).changes[0]?.type,
    'agent.welcome',
  );
  const sent = await call(client, 'leave_feedback', { message: 'hello', category: 'question' });
  assert.not.ok(sent.isError);
  const waited = await call(client, 'wait_for_changes', { timeout: 5 });
  assert.is(
    (waited.structuredContent as { changes: { type: string }[] }).changes[0]?.type,
    'feedback.received',
  );
});

test('a bad token answers a tool error with code unauthorized', async (context) => {
  const client = await mcpClient(context);
  const result = await call(client, 'whoami', { api_token: 'asvc_not_a_token' });
  assert.ok(result.isError);
  assert.is(problemOf(result).code, 'unauthorized');
  const missing = await call(client, 'whoami');
  assert.is(problemOf(missing).code, 'unauthorized');
});

test('a bad token in the header answers a tool error too', async (context) => {
  const client = await mcpClient(context, `asvc_${'x'.repeat(46)}`);
  const result = await call(client, 'whoami');
  assert.ok(result.isError);
  assert.is(problemOf(result).code, 'unauthorized');
});

test('bad arguments answer tool errors with the same codes as HTTP', async (context) => {
  const client = await mcpClient(context);
  assert.is(problemOf(await call(client, 'sign_up', { name: '' })).code, 'invalid_input');
  assert.is(
    problemOf(await call(client, 'sign_up', { name: 'x', role: 'admin' })).code,
    'unknown_field',
  );
  assert.is(
    problemOf(await call(client, 'sign_up', { name: 'Service Desk' })).code,
    'name_reserved',
  );
  assert.is(problemOf(await call(client, 'no_such_tool')).code, 'not_found');
  assert.is(problemOf(await call(client, 'whoami', { api_token: 42 })).code, 'invalid_input');
});

test.run();
