import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Workspaces over MCP answer as over HTTP (their rules are in workspaces-rules.test.ts, through
 * the direct door).
 */
const test = suite<{ server: TestServer }>('workspaces through MCP');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

test('over MCP the same operations work with the same answers', async ({ server }) => {
  const owner = await server.signUp();
  const client = new Client({ name: 'workspace-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
      requestInit: { headers: { authorization: `Bearer ${owner.api_token}` } },
    }),
  );
  try {
    const made = (await client.callTool({
      name: 'create_workspace',
      arguments: { visibility: 'public', name: 'shop' },
    })) as unknown as { structuredContent: { workspace_id: string; visibility: string } };
    assert.is(made.structuredContent.visibility, 'public');
    const shown = (await client.callTool({
      name: 'get_workspace',
      arguments: { workspace_id: made.structuredContent.workspace_id },
    })) as unknown as { structuredContent: { members: unknown[] } };
    assert.is(shown.structuredContent.members.length, 1);
  } finally {
    await client.close();
  }
});

test.run();
