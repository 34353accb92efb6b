import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { newToken } from '../../actors/kernel/tokens.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { callTool as call, connectMcp, toolProblem as problemOf } from '../helpers/clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

type Context = { server: TestServer; clients: Client[]; operatorToken: string };
const test = suite<Context>('MCP at /mcp with the SDK client');

test.before(async (context) => {
  context.operatorToken = newToken();
  context.server = await startTestServer({ operatorToken: context.operatorToken });
  context.clients = [];
});
test.after(async ({ server, clients }) => {
  for (const client of clients) await client.close();
  await server.close();
});

async function mcpClient(context: Context, token?: string): Promise<Client> {
  const client = await connectMcp(context.server, token, 'test-agent');
  context.clients.push(client);
  return client;
}

/** The JSON-RPC error a call was refused with (the SDK client throws it). */
const refusalOf = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
  const error = await client.callTool({ name, arguments: args }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.instance(error, McpError, `${name} is refused as a protocol error`);
  return error as McpError;
};

test("tools/list offers every operation of the table but the operator's, described, with its input schema", async (context) => {
  const client = await mcpClient(context);
  const { tools } = await client.listTools();
  assert.equal(
    tools.map((t) => t.name).sort(),
    OPERATION_LIST.filter((o) => !o.operatorOnly)
      .map((o) => o.name)
      .sort(),
  );
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
  assert.is(problemOf(await call(client, 'whoami', { api_token: 42 })).code, 'invalid_input');
});

test('an unknown tool is a protocol error -32602, not a tool result', async (context) => {
  const client = await mcpClient(context);
  const error = await refusalOf(client, 'no_such_tool');
  assert.is(error.code, -32602);
  assert.match(error.message, /No tool is called no_such_tool/);
  assert.is((error.data as { code: string }).code, 'not_found');
});

test('tool schemas hold no empty "any" schema that strict clients flag', async (context) => {
  const client = await mcpClient(context, context.operatorToken);
  const { tools } = await client.listTools();
  assert.not.match(JSON.stringify(tools), /"additionalProperties":\{\}/);
  const changes = tools.find((t) => t.name === 'changes');
  assert.match(JSON.stringify(changes?.outputSchema), /"additionalProperties":true/);
});

test('the operator sees and calls its own tools; with its token only as an argument it still may call them', async (context) => {
  const sender = await context.server.signUp();
  const sent = await call(await mcpClient(context, sender.api_token), 'leave_feedback', {
    message: 'is anyone there?',
    category: 'question',
  });
  const { feedback_id } = sent.structuredContent as { feedback_id: string };

  const operator = await mcpClient(context, context.operatorToken);
  const listed = (await operator.listTools()).tools.map((t) => t.name);
  assert.ok(listed.includes('answer_feedback'), 'listed for the operator');
  const answered = await call(operator, 'answer_feedback', { feedback_id, answer: 'yes' });
  assert.not.ok(answered.isError, JSON.stringify(answered));
  assert.is((answered.structuredContent as { delivered: boolean }).delivered, true);

  const anonymous = await mcpClient(context);
  const again = await call(anonymous, 'answer_feedback', {
    feedback_id,
    answer: 'yes, again',
    api_token: context.operatorToken,
  });
  assert.not.ok(again.isError, JSON.stringify(again));
});

test('an operator-only tool is absent for everyone else, and calling it answers exactly as an unknown tool', async (context) => {
  const agent = await context.server.signUp();
  for (const client of [await mcpClient(context), await mcpClient(context, agent.api_token)]) {
    const listed = (await client.listTools()).tools.map((t) => t.name);
    assert.not.ok(listed.includes('answer_feedback'));
    const hidden = await refusalOf(client, 'answer_feedback', {
      feedback_id: '00000000-0000-4000-8000-000000000000',
      answer: 'x',
    });
    const unknown = await refusalOf(client, 'answer_feedbacks', {
      feedback_id: '00000000-0000-4000-8000-000000000000',
      answer: 'x',
    });
    assert.is(hidden.code, unknown.code);
    assert.is(hidden.message, unknown.message.replace('answer_feedbacks', 'answer_feedback'));
    assert.equal(
      JSON.stringify(hidden.data),
      JSON.stringify(unknown.data).replaceAll('answer_feedbacks', 'answer_feedback'),
    );
  }
  // Neither a bad nor a non-string api_token tells the tool apart from an absent one.
  const client = await mcpClient(context);
  for (const api_token of [agent.api_token, 'asvc_not_a_token', 42]) {
    const refused = await refusalOf(client, 'answer_feedback', { api_token });
    assert.is(refused.code, -32602);
  }
});

test("a call's arguments are held to its operation's own body limit, not one limit for all", async (context) => {
  const client = await mcpClient(context);
  // sign_up takes 4 KiB over HTTP, leave_feedback 32 KiB: the same 10 KB fit one and not the other.
  const long = 'x'.repeat(10_000);
  const refused = await call(client, 'sign_up', { name: long });
  assert.ok(refused.isError);
  const problem = problemOf(refused) as { code: string; limit_bytes?: number };
  assert.is(problem.code, 'payload_too_large');
  assert.is(problem.limit_bytes, 4096);
  const taken = await call(client, 'leave_feedback', { message: long, category: 'bug' });
  assert.not.ok(taken.isError, JSON.stringify(taken));
});

test('query_index over MCP answers what POST /index/sql answers, refusals included', async (context) => {
  const agent = await context.server.signUp();
  const created = await context.server.post('/workspaces', {}, agent.api_token);
  const { workspace_id } = (await created.json()) as { workspace_id: string };
  const saved = await fetch(context.server.url(`/workspaces/${workspace_id}/files/a.md`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body: '---\ncity: Berlin\n---\nHello.\n',
  });
  assert.is(saved.status, 201);
  const query = {
    sql: "select path, fields->>'city' as city from files where version = $1::int",
    params: [1],
  };
  const overHttp = (await (
    await context.server.post('/index/sql', query, agent.api_token)
  ).json()) as Record<string, unknown>;
  const client = await mcpClient(context, agent.api_token);
  const overMcp = await call(client, 'query_index', query);
  assert.not.ok(overMcp.isError);
  const withoutTime = (answer: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(answer).filter(([key]) => key !== 'elapsed_ms'));
  const httpRest = withoutTime(overHttp);
  const mcpRest = withoutTime(overMcp.structuredContent ?? {});
  assert.equal(mcpRest, httpRest);
  assert.equal(httpRest.rows, [['a.md', 'Berlin']]);
  const refused = await call(client, 'query_index', { sql: 'select * from pg_class' });
  assert.ok(refused.isError);
  assert.is(problemOf(refused).code, 'sql_not_allowed');
});

test.run();
