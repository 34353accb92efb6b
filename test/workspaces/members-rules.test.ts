import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ofType } from '../helpers/changes.ts';
import { directDoor, type DirectAgent, type DirectDoor } from '../helpers/direct.ts';
import { newChanges } from '../helpers/direct-feed.ts';
import {
  joinedBy,
  problemOf,
  readText,
  workspaceOf,
  writeText,
} from '../helpers/direct-workspaces.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Members and invites can be taken back: remove_member and revoke_invite (owner only), and a
 * member's pending invites die with its membership, so it cannot come back through one. Through
 * the direct door: members.test.ts takes them through MCP.
 */
const test = suite<{ server: TestServer; door: DirectDoor }>(
  'members removed and invites revoked, without a transport',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

const invite = (door: DirectDoor, by: DirectAgent, workspaceId: string) =>
  door.call('create_invite', { workspace_id: workspaceId, expires_in_hours: 720 }, by.api_token);

const listInvites = async (door: DirectDoor, owner: DirectAgent, workspaceId: string) =>
  (await door.call('list_invites', { workspace_id: workspaceId }, owner.api_token)).invites;

test('a member that leaves cannot come back with a 720-hour invite it made before leaving', async ({
  door,
}) => {
  const owner = await door.signUp();
  const member = await door.signUp();
  const workspaceId = await workspaceOf(door, owner);
  await joinedBy(door, owner, member, workspaceId);
  const kept = await invite(door, member, workspaceId);
  await door.call('leave_workspace', { workspace_id: workspaceId }, member.api_token);
  const back = await door.refusal(
    'redeem_invite',
    { invite_token: kept.invite_token },
    member.api_token,
  );
  assert.is(back.code, 'invite_revoked');
  const read = await door.refusal('get_workspace', { workspace_id: workspaceId }, member.api_token);
  assert.is(read.code, 'not_found');
  const invites = await listInvites(door, owner, workspaceId);
  assert.is(invites.find((row) => row.invite_id === kept.invite_id)?.status, 'revoked');
});

test('the owner removes a member: it loses access, its invites die, and it and the others hear member.removed', async ({
  door,
}) => {
  const owner = await door.signUp();
  const member = await door.signUp();
  const other = await door.signUp();
  const workspaceId = await workspaceOf(door, owner);
  await joinedBy(door, owner, member, workspaceId);
  await joinedBy(door, owner, other, workspaceId);
  await writeText(door, member, workspaceId, 'mine.txt', 'written by the member');
  const kept = await invite(door, member, workspaceId);

  const removed = await door.call(
    'remove_member',
    { workspace_id: workspaceId, agent_id: member.agent_id },
    owner.api_token,
  );
  assert.equal(removed, {
    workspace_id: workspaceId,
    agent_id: member.agent_id,
    removed: true,
  });

  // Gone: reads and writes answer as for a workspace that does not exist.
  const read = await door.refusal(
    'read_file',
    { workspace_id: workspaceId, path: 'mine.txt' },
    member.api_token,
  );
  assert.is(read.code, 'not_found');
  const members = await door.call('get_workspace', { workspace_id: workspaceId }, owner.api_token);
  assert.not.ok(members.members.some((m) => m.agent_id === member.agent_id));
  // Its file stays.
  assert.is(await readText(door, owner, workspaceId, 'mine.txt'), 'written by the member');
  // Its invite died with its membership: nobody gets in with it.
  const stranger = await door.signUp();
  const redeemed = await door.refusal(
    'redeem_invite',
    { invite_token: kept.invite_token },
    stranger.api_token,
  );
  assert.is(redeemed.code, 'invite_revoked');
  for (const agent of [member, other, owner]) {
    const heard = ofType(await newChanges(door, agent), 'member.removed');
    assert.is(heard.length, 1, `member.removed reaches ${agent.agent_id}`);
    assert.is(heard[0]?.workspace_id, workspaceId);
    assert.is(heard[0]?.data.agent_id, member.agent_id);
  }
});

test('only the owner removes members: a member gets 403, a stranger 404, the owner itself 409, a non-member 404', async ({
  door,
}) => {
  const owner = await door.signUp();
  const member = await door.signUp();
  const stranger = await door.signUp();
  const workspaceId = await workspaceOf(door, owner);
  await joinedBy(door, owner, member, workspaceId);
  const removing = (agentId: string, by: DirectAgent, workspace_id = workspaceId) =>
    door.refusal('remove_member', { workspace_id, agent_id: agentId }, by.api_token);

  const byMember = await removing(owner.agent_id, member);
  assert.is(byMember.code, 'forbidden');
  const byStranger = await removing(member.agent_id, stranger);
  assert.is(byStranger.code, 'not_found');
  const missing = await removing(member.agent_id, stranger, '00000000-0000-4000-8000-000000000000');
  assert.equal(problemOf(byStranger), problemOf(missing));
  const self = await removing(owner.agent_id, owner);
  assert.is(self.code, 'owner_cannot_leave');
  const notMember = await removing(stranger.agent_id, owner);
  assert.is(notMember.code, 'not_found');
  const bad = await removing('not-a-uuid', owner);
  assert.is(bad.code, 'invalid_input');
  // Nothing changed: the member is still in.
  await door.call('get_workspace', { workspace_id: workspaceId }, member.api_token);
});

test('in a public workspace a reader that is not a member gets 403 for removing, as it can see the workspace', async ({
  door,
}) => {
  const owner = await door.signUp();
  const member = await door.signUp();
  const reader = await door.signUp();
  const workspaceId = await workspaceOf(door, owner, 'public');
  await joinedBy(door, owner, member, workspaceId);
  const refused = await door.refusal(
    'remove_member',
    { workspace_id: workspaceId, agent_id: member.agent_id },
    reader.api_token,
  );
  assert.is(refused.code, 'forbidden');
});

test('the owner revokes a pending invite: its token answers 410 invite_revoked and the list says revoked', async ({
  door,
}) => {
  const owner = await door.signUp();
  const guest = await door.signUp();
  const workspaceId = await workspaceOf(door, owner);
  const made = await invite(door, owner, workspaceId);
  const revoke = () =>
    door.call(
      'revoke_invite',
      { workspace_id: workspaceId, invite_id: made.invite_id },
      owner.api_token,
    );

  assert.equal(await revoke(), { invite_id: made.invite_id, status: 'revoked' });
  assert.equal(await revoke(), { invite_id: made.invite_id, status: 'revoked' });

  const redeemed = await door.refusal(
    'redeem_invite',
    { invite_token: made.invite_token },
    guest.api_token,
  );
  assert.is(redeemed.code, 'invite_revoked');
  assert.is((await listInvites(door, owner, workspaceId))[0]?.status, 'revoked');
});

test('revoking an invite already redeemed answers 409 invite_already_used and keeps the member; others may not revoke', async ({
  door,
}) => {
  const owner = await door.signUp();
  const member = await door.signUp();
  const stranger = await door.signUp();
  const workspaceId = await workspaceOf(door, owner);
  const made = await invite(door, owner, workspaceId);
  await door.call('redeem_invite', { invite_token: made.invite_token }, member.api_token);
  const revoking = (inviteId: string, by: DirectAgent, workspace_id = workspaceId) =>
    door.refusal('revoke_invite', { workspace_id, invite_id: inviteId }, by.api_token);
  const used = await revoking(made.invite_id, owner);
  assert.is(used.code, 'invite_already_used');
  const pending = await invite(door, member, workspaceId);
  const byMember = await revoking(pending.invite_id, member);
  assert.is(byMember.code, 'forbidden');
  const byStranger = await revoking(made.invite_id, stranger);
  assert.is(byStranger.code, 'not_found');
  // An invite of another workspace is not found here.
  const elsewhere = await workspaceOf(door, owner);
  const foreign = await revoking(pending.invite_id, owner, elsewhere);
  assert.is(foreign.code, 'not_found');
  await door.call('get_workspace', { workspace_id: workspaceId }, member.api_token);
});

test.run();
