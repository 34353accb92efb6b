import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { heard as changesOf } from '../helpers/changes.ts';
import { connectMcp } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { joinWorkspace, newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * Members and invites can be taken back: remove_member and revoke_invite (owner only), and a
 * member's pending invites die with its membership, so it cannot come back through one.
 */
const test = suite<{ server: TestServer }>('members removed and invites revoked');

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

test('a member that leaves cannot come back with a 720-hour invite it made before leaving', async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, workspaceId);
  const kept = await invite(server, member, workspaceId);
  const left = await callJson(server, 'POST', `/workspaces/${workspaceId}/leave`, member.api_token);
  assert.is(left.status, 200);
  const back = await callJson(server, 'POST', '/invites/redeem', member.api_token, {
    invite_token: kept.invite_token,
  });
  assert.is(back.status, 410, JSON.stringify(back.body));
  assert.is(back.body.code, 'invite_revoked');
  const read = await callJson(server, 'GET', `/workspaces/${workspaceId}`, member.api_token);
  assert.is(read.status, 404);
  const invites = await callJson<{ invites: { invite_id: string; status: string }[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/invites`,
    owner.api_token,
  );
  assert.is(
    invites.body.invites.find((row) => row.invite_id === kept.invite_id)?.status,
    'revoked',
  );
});

test('the owner removes a member: it loses access, its invites die, and it and the others hear member.removed', async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const other = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, workspaceId);
  await joinWorkspace(server, owner, other, workspaceId);
  await saveFile(server, member, workspaceId, 'mine.txt', 'written by the member');
  const kept = await invite(server, member, workspaceId);

  const removed = await callJson(
    server,
    'DELETE',
    `/workspaces/${workspaceId}/members/${member.agent_id}`,
    owner.api_token,
  );
  assert.is(removed.status, 200, JSON.stringify(removed.body));
  assert.equal(removed.body, {
    workspace_id: workspaceId,
    agent_id: member.agent_id,
    removed: true,
  });

  // Gone: reads and writes answer as for a workspace that does not exist.
  const read = await callJson(
    server,
    'GET',
    `/workspaces/${workspaceId}/files/mine.txt`,
    member.api_token,
  );
  assert.is(read.status, 404);
  const members = await callJson<{ members: { agent_id: string }[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}`,
    owner.api_token,
  );
  assert.not.ok(members.body.members.some((m) => m.agent_id === member.agent_id));
  // Its file stays.
  const file = await server.get(`/workspaces/${workspaceId}/files/mine.txt`, owner.api_token);
  assert.is(await file.text(), 'written by the member');
  // Its invite died with its membership: nobody gets in with it.
  const stranger = await server.signUp();
  const redeemed = await callJson(server, 'POST', '/invites/redeem', stranger.api_token, {
    invite_token: kept.invite_token,
  });
  assert.is(redeemed.body.code, 'invite_revoked');
  for (const agent of [member, other, owner]) {
    const heard = await changesOf(server, agent, 'member.removed');
    assert.is(heard.length, 1, `member.removed reaches ${agent.agent_id}`);
    assert.is(heard[0]?.workspace_id, workspaceId);
    assert.is(heard[0]?.data.agent_id, member.agent_id);
  }
});

test('only the owner removes members: a member gets 403, a stranger 404, the owner itself 409, a non-member 404', async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const stranger = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, workspaceId);
  const path = (agentId: string) => `/workspaces/${workspaceId}/members/${agentId}`;

  const byMember = await callJson(server, 'DELETE', path(owner.agent_id), member.api_token);
  assert.is(byMember.status, 403);
  const byStranger = await callJson(server, 'DELETE', path(member.agent_id), stranger.api_token);
  assert.is(byStranger.status, 404);
  const missing = await callJson(
    server,
    'DELETE',
    `/workspaces/00000000-0000-4000-8000-000000000000/members/${member.agent_id}`,
    stranger.api_token,
  );
  assert.equal(byStranger.body, missing.body);
  const self = await callJson(server, 'DELETE', path(owner.agent_id), owner.api_token);
  assert.is(self.status, 409);
  assert.is(self.body.code, 'owner_cannot_leave');
  const notMember = await callJson(server, 'DELETE', path(stranger.agent_id), owner.api_token);
  assert.is(notMember.status, 404);
  const bad = await callJson(server, 'DELETE', path('not-a-uuid'), owner.api_token);
  assert.is(bad.status, 400);
  // Nothing changed: the member is still in.
  const still = await callJson(server, 'GET', `/workspaces/${workspaceId}`, member.api_token);
  assert.is(still.status, 200);
});

test('in a public workspace a reader that is not a member gets 403 for removing, as it can see the workspace', async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const reader = await server.signUp();
  const workspaceId = await newWorkspace(server, owner, 'public');
  await joinWorkspace(server, owner, member, workspaceId);
  const refused = await callJson(
    server,
    'DELETE',
    `/workspaces/${workspaceId}/members/${member.agent_id}`,
    reader.api_token,
  );
  assert.is(refused.status, 403);
});

test('the owner revokes a pending invite: its token answers 410 invite_revoked and the list says revoked', async ({
  server,
}) => {
  const owner = await server.signUp();
  const guest = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  const made = await invite(server, owner, workspaceId);
  const path = `/workspaces/${workspaceId}/invites/${made.invite_id}`;

  const revoked = await callJson(server, 'DELETE', path, owner.api_token);
  assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  assert.equal(revoked.body, { invite_id: made.invite_id, status: 'revoked' });
  const again = await callJson(server, 'DELETE', path, owner.api_token);
  assert.equal(again.body, { invite_id: made.invite_id, status: 'revoked' });

  const redeemed = await callJson(server, 'POST', '/invites/redeem', guest.api_token, {
    invite_token: made.invite_token,
  });
  assert.is(redeemed.status, 410);
  assert.is(redeemed.body.code, 'invite_revoked');
  const list = await callJson<{ invites: { invite_id: string; status: string }[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/invites`,
    owner.api_token,
  );
  assert.is(list.body.invites[0]?.status, 'revoked');
});

test('revoking an invite already redeemed answers 409 invite_already_used and keeps the member; others may not revoke', async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const stranger = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  const made = await invite(server, owner, workspaceId);
  const joined = await callJson(server, 'POST', '/invites/redeem', member.api_token, {
    invite_token: made.invite_token,
  });
  assert.is(joined.status, 200);
  const path = `/workspaces/${workspaceId}/invites/${made.invite_id}`;
  const used = await callJson(server, 'DELETE', path, owner.api_token);
  assert.is(used.status, 409);
  assert.is(used.body.code, 'invite_already_used');
  const pending = await invite(server, member, workspaceId);
  const byMember = await callJson(
    server,
    'DELETE',
    `/workspaces/${workspaceId}/invites/${pending.invite_id}`,
    member.api_token,
  );
  assert.is(byMember.status, 403);
  const byStranger = await callJson(server, 'DELETE', path, stranger.api_token);
  assert.is(byStranger.status, 404);
  // An invite of another workspace is not found here.
  const elsewhere = await newWorkspace(server, owner);
  const foreign = await callJson(
    server,
    'DELETE',
    `/workspaces/${elsewhere}/invites/${pending.invite_id}`,
    owner.api_token,
  );
  assert.is(foreign.status, 404);
  const still = await callJson(server, 'GET', `/workspaces/${workspaceId}`, member.api_token);
  assert.is(still.status, 200);
});

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
