import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { directDoor, type DirectAgent, type DirectDoor } from '../helpers/direct.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Who may change a workspace's members and invites, through the direct door (no transport):
 * owner-only operations, what a member and a stranger are told, and what a revoked invite does.
 */
const test = suite<{ server: TestServer; door: DirectDoor }>(
  'workspace rules, without a transport',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

/** A workspace of `visibility` owned by a new agent, with one member who joined by invite. */
async function workspaceWithMember(door: DirectDoor, visibility: 'private' | 'public') {
  const owner = await door.signUp();
  const member = await door.signUp();
  const { workspace_id } = await door.call('create_workspace', { visibility }, owner.api_token);
  await join(door, owner, member, workspace_id);
  return { owner, member, workspaceId: workspace_id };
}

async function join(door: DirectDoor, by: DirectAgent, guest: DirectAgent, workspaceId: string) {
  const { invite_token } = await door.call(
    'create_invite',
    { workspace_id: workspaceId },
    by.api_token,
  );
  const joined = await door.call('redeem_invite', { invite_token }, guest.api_token);
  assert.equal(joined, { workspace_id: workspaceId, role: 'member' });
}

async function roles(door: DirectDoor, owner: DirectAgent, workspaceId: string) {
  const shown = await door.call('get_workspace', { workspace_id: workspaceId }, owner.api_token);
  return shown.members.map((member) => `${member.agent_id}:${member.role}`).sort();
}

test('only the owner removes members and revokes invites: a member is refused 403 forbidden, a stranger 404 not_found, and nothing changes', async ({
  door,
}) => {
  const { owner, member, workspaceId } = await workspaceWithMember(door, 'private');
  const stranger = await door.signUp();
  const { invite_id } = await door.call(
    'create_invite',
    { workspace_id: workspaceId },
    owner.api_token,
  );
  const before = await roles(door, owner, workspaceId);
  for (const [caller, code] of [
    [member, 'forbidden'],
    [stranger, 'not_found'],
  ] as const) {
    const removing = await door.refusal(
      'remove_member',
      { workspace_id: workspaceId, agent_id: member.agent_id },
      caller.api_token,
    );
    assert.is(
      removing.code,
      code,
      `remove_member by ${caller === member ? 'a member' : 'a stranger'}`,
    );
    const revoking = await door.refusal(
      'revoke_invite',
      { workspace_id: workspaceId, invite_id },
      caller.api_token,
    );
    assert.is(
      revoking.code,
      code,
      `revoke_invite by ${caller === member ? 'a member' : 'a stranger'}`,
    );
  }
  assert.equal(await roles(door, owner, workspaceId), before, 'the members are as they were');
  const listed = await door.call('list_invites', { workspace_id: workspaceId }, owner.api_token);
  assert.equal(
    listed.invites.filter((invite) => invite.invite_id === invite_id).map((i) => i.status),
    ['pending'],
    'the invite is still pending',
  );
});

test('a revoked invite answers 410 invite_revoked to whoever redeems it, and lets nobody in', async ({
  door,
}) => {
  const owner = await door.signUp();
  const guest = await door.signUp();
  const { workspace_id } = await door.call('create_workspace', {}, owner.api_token);
  const invite = await door.call('create_invite', { workspace_id }, owner.api_token);
  const revoked = await door.call(
    'revoke_invite',
    { workspace_id, invite_id: invite.invite_id },
    owner.api_token,
  );
  assert.equal(revoked, { invite_id: invite.invite_id, status: 'revoked' });

  const refused = await door.refusal(
    'redeem_invite',
    { invite_token: invite.invite_token },
    guest.api_token,
  );
  assert.is(refused.code, 'invite_revoked');
  assert.is(refused.status, 410);
  const reading = await door.refusal('get_workspace', { workspace_id }, guest.api_token);
  assert.is(reading.code, 'not_found', 'the guest is not a member');
});

test('in a private workspace every member invites; in a public one only the owner, a member is refused 403 forbidden', async ({
  door,
}) => {
  const closed = await workspaceWithMember(door, 'private');
  const made = await door.call(
    'create_invite',
    { workspace_id: closed.workspaceId },
    closed.member.api_token,
  );
  assert.ok(made.invite_token, 'a member of a private workspace invites');

  const open = await workspaceWithMember(door, 'public');
  const refused = await door.refusal(
    'create_invite',
    { workspace_id: open.workspaceId },
    open.member.api_token,
  );
  assert.is(refused.code, 'forbidden');
  const listing = await door.refusal(
    'list_invites',
    { workspace_id: open.workspaceId },
    open.member.api_token,
  );
  assert.is(listing.code, 'forbidden', 'nor sees the invites');
});

test('the owner can neither leave (409 owner_cannot_leave) nor remove itself (409 owner_cannot_leave): it stays the owner', async ({
  door,
}) => {
  const { owner, workspaceId } = await workspaceWithMember(door, 'private');
  const before = await roles(door, owner, workspaceId);
  const leaving = await door.refusal(
    'leave_workspace',
    { workspace_id: workspaceId },
    owner.api_token,
  );
  assert.is(leaving.code, 'owner_cannot_leave');
  const removing = await door.refusal(
    'remove_member',
    { workspace_id: workspaceId, agent_id: owner.agent_id },
    owner.api_token,
  );
  assert.is(removing.code, 'owner_cannot_leave');
  assert.equal(await roles(door, owner, workspaceId), before);
});

test('a member that leaves takes its pending invites with it: each then answers invite_revoked', async ({
  door,
}) => {
  const { owner, member, workspaceId } = await workspaceWithMember(door, 'private');
  const guest = await door.signUp();
  const { invite_token } = await door.call(
    'create_invite',
    { workspace_id: workspaceId },
    member.api_token,
  );
  assert.equal(
    await door.call('leave_workspace', { workspace_id: workspaceId }, member.api_token),
    { workspace_id: workspaceId, left: true },
  );
  const refused = await door.refusal('redeem_invite', { invite_token }, guest.api_token);
  assert.is(refused.code, 'invite_revoked');
  assert.equal(
    await roles(door, owner, workspaceId),
    [`${owner.agent_id}:owner`],
    'only the owner is left',
  );
});

test.run();
