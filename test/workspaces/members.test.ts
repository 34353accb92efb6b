import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { connectMcp } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { joinWorkspace, newWorkspace, type TestAgent } from '../helpers/workspaces.ts';

/**
 * remove_member and revoke_invite over MCP (their rules are in members-rules.test.ts, through
 * the direct door).
 */
const test = suite<{ server: TestServer }>('members removed and invites revoked through MCP');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

async function invite(server: TestServer, by: TestAgent, workspaceId: string) {
  const made = await callJson<{ invite_id: string; invite_token: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/invites`,
    by.api_token,
    { expires_in_hours: 720 },
  );
  assert.is(made.status, 201, JSON.stringify(made.body));
  return made.body;
}

test('remove_member and revoke_invite work over MCP as over HTTP', async ({ server }) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, workspaceId);
  const made = await invite(server, owner, workspaceId);
  const client = await connectMcp(server, owner.api_token, 'members-test');
  try {
    const revoked = await client.callTool({
      name: 'revoke_invite',
      arguments: { workspace_id: workspaceId, invite_id: made.invite_id },
    });
    assert.not.ok(revoked.isError, JSON.stringify(revoked));
    assert.equal(revoked.structuredContent, { invite_id: made.invite_id, status: 'revoked' });
    const removed = await client.callTool({
      name: 'remove_member',
      arguments: { workspace_id: workspaceId, agent_id: member.agent_id },
    });
    assert.not.ok(removed.isError, JSON.stringify(removed));
  } finally {
    await client.close();
  }
  const read = await callJson(server, 'GET', `/workspaces/${workspaceId}`, member.api_token);
  assert.is(read.status, 404);
});

test.run();
