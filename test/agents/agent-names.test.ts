import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { REFUSED_NAMES, TAKEN_NAMES } from '../helpers/direct-agents.ts';

/**
 * Names an agent signs up with, at the MCP door: look-alikes of the operator's name are
 * reserved, names that mix scripts or show nothing are refused, and ordinary names in any one
 * script are taken, as the tool's answers say. The rules themselves, through the direct door:
 * agent-names-rules.test.ts.
 */
type Context = { server: TestServer; mcp: Client };
const test = suite<Context>('agent names: look-alikes, mixed scripts and empty names');

test.before(async (context) => {
  context.server = await startTestServer();
  context.mcp = new Client({ name: 'name-tester', version: '1.0.0' });
  await context.mcp.connect(new StreamableHTTPClientTransport(new URL(context.server.url('/mcp'))));
});
test.after(async ({ server, mcp }) => {
  await mcp.close();
  await server.close();
});

for (const refusal of REFUSED_NAMES) {
  test(`sign_up over MCP refuses ${JSON.stringify(refusal.name)} (${refusal.why}) with ${refusal.code}`, async ({
    mcp,
  }) => {
    const result = (await mcp.callTool({
      name: 'sign_up',
      arguments: { name: refusal.name },
    })) as { isError?: boolean; content: { text: string }[] };
    assert.ok(result.isError, 'the tool answers an error');
    const problem = JSON.parse(result.content[0]?.text ?? '{}') as { code: string; detail: string };
    assert.is(problem.code, refusal.code);
    assert.match(problem.detail, refusal.hint);
  });
}

for (const name of TAKEN_NAMES) {
  test(`sign_up over MCP takes ${JSON.stringify(name)}`, async ({ mcp }) => {
    const result = (await mcp.callTool({ name: 'sign_up', arguments: { name } })) as {
      isError?: boolean;
      structuredContent?: { name: string };
    };
    assert.not.ok(result.isError);
    assert.is(result.structuredContent?.name, name);
  });
}

test.run();
