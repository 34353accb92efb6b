import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestClock } from '../helpers/clock.ts';
import {
  directDoor,
  type DirectAgent,
  type DirectDoor,
  type DirectInput,
} from '../helpers/direct.ts';
import { outcome, problemOf } from '../helpers/direct-workspaces.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Workspaces and invites, on a clock the test moves, through the direct door: workspaces.test.ts
 * takes them through MCP.
 */
const test = suite<{ server: TestServer; clock: TestClock; door: DirectDoor }>(
  'workspaces and invites, without a transport',
);

test.before(async (context) => {
  context.clock = new TestClock();
  context.server = await startTestServer({ clock: context.clock });
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

const create = (
  door: DirectDoor,
  owner: DirectAgent,
  input: DirectInput<'create_workspace'> = {},
) => door.call('create_workspace', input, owner.api_token);

const invite = (
  door: DirectDoor,
  member: DirectAgent,
  workspaceId: string,
  input: Omit<DirectInput<'create_invite'>, 'workspace_id'> = {},
) => door.call('create_invite', { workspace_id: workspaceId, ...input }, member.api_token);

const redeem = (door: DirectDoor, agent: DirectAgent, token: string) =>
  door.call('redeem_invite', { invite_token: token }, agent.api_token);

async function typesOf(door: DirectDoor, agent: DirectAgent): Promise<string[]> {
  const page = await door.call('changes', {}, agent.api_token);
  return page.changes.map((change) => change.type);
}

const membersOf = async (door: DirectDoor, agent: DirectAgent, workspaceId: string) =>
  (await door.call('get_workspace', { workspace_id: workspaceId }, agent.api_token)).members;

test('a new workspace is private by default, owned by its maker, and listed with its role', async ({
  door,
}) => {
  const owner = await door.signUp();
  const made = await create(door, owner, { name: 'Logo work' });
  const id = made.workspace_id;
  assert.equal(made, {
    workspace_id: id,
    visibility: 'private',
    name: 'Logo work',
    owner_agent_id: owner.agent_id,
  });
  const shown = await door.call('get_workspace', { workspace_id: id }, owner.api_token);
  assert.equal(shown, {
    workspace_id: id,
    visibility: 'private',
    name: 'Logo work',
    owner: { agent_id: owner.agent_id, name: owner.name },
    members: [{ agent_id: owner.agent_id, name: owner.name, role: 'owner' }],
  });
  const listed = await door.call('list_workspaces', {}, owner.api_token);
  assert.equal(
    listed.workspaces.map((w) => [w.workspace_id, w.role]),
    [[id, 'owner']],
  );
  assert.is(listed.next_cursor, null);
});

test('a private workspace is, to a stranger, exactly a workspace that does not exist; a public one is readable', async ({
  door,
}) => {
  const owner = await door.signUp();
  const stranger = await door.signUp();
  const secret = await create(door, owner);
  const open = await create(door, owner, { visibility: 'public' });
  const reading = (workspace_id: string) =>
    door.refusal('get_workspace', { workspace_id }, stranger.api_token);
  const hidden = await reading(secret.workspace_id);
  const missing = await reading('6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20');
  assert.is(hidden.code, 'not_found');
  assert.equal(problemOf(hidden), problemOf(missing));
  const hiddenInvite = await door.refusal(
    'create_invite',
    { workspace_id: secret.workspace_id },
    stranger.api_token,
  );
  assert.is(hiddenInvite.code, 'not_found', 'inviting to it: the same 404');
  assert.is(hiddenInvite.message, missing.message);
  await door.call('get_workspace', { workspace_id: open.workspace_id }, stranger.api_token);
  // Readable is not writable: only the owner invites to a public workspace.
  const refused = await door.refusal(
    'create_invite',
    { workspace_id: open.workspace_id },
    stranger.api_token,
  );
  assert.is(refused.code, 'forbidden');
});

test('an invite admits one agent: it joins, every member hears of it, and the token is spent', async ({
  server,
  door,
}) => {
  const owner = await door.signUp();
  const guest = await door.signUp();
  const late = await door.signUp();
  const { workspace_id } = await create(door, owner);
  const made = await invite(door, owner, workspace_id);
  const token = made.invite_token;
  assert.match(token, /^asvi_/);
  assert.is(
    Date.parse(made.expires_at) - server.services.clock.now(),
    168 * 3_600_000,
    'seven days by default',
  );
  const joined = await redeem(door, guest, token);
  assert.equal(joined, { workspace_id, role: 'member' });
  const members = await membersOf(door, guest, workspace_id);
  assert.equal(
    members.map((m) => [m.agent_id, m.role]),
    [
      [owner.agent_id, 'owner'],
      [guest.agent_id, 'member'],
    ],
  );
  assert.ok((await typesOf(door, owner)).includes('invite.joined'));
  assert.ok((await typesOf(door, guest)).includes('invite.joined'));

  const again = await door.refusal('redeem_invite', { invite_token: token }, late.api_token);
  assert.is(again.code, 'invite_already_used');
  const listed = await door.call('list_invites', { workspace_id }, owner.api_token);
  assert.equal(listed.invites[0]?.status, 'joined');
  assert.equal(listed.invites[0]?.joined_agent_id, guest.agent_id);
  assert.not.ok('invite_token' in (listed.invites[0] ?? {}), 'tokens are never shown again');
});

test('a member leaves: it no longer reads the workspace, the members left hear of it, and the owner cannot leave', async ({
  door,
}) => {
  const owner = await door.signUp();
  const guest = await door.signUp();
  const stranger = await door.signUp();
  const { workspace_id } = await create(door, owner);
  await redeem(door, guest, (await invite(door, owner, workspace_id)).invite_token);
  const leaving = (agent: DirectAgent) =>
    door.refusal('leave_workspace', { workspace_id }, agent.api_token);
  const ownerLeaving = await leaving(owner);
  assert.is(ownerLeaving.code, 'owner_cannot_leave');
  const strangerLeaving = await leaving(stranger);
  assert.is(strangerLeaving.code, 'not_found');
  const left = await door.call('leave_workspace', { workspace_id }, guest.api_token);
  assert.equal(left, { workspace_id, left: true });
  assert.is(
    (await door.refusal('get_workspace', { workspace_id }, guest.api_token)).code,
    'not_found',
  );
  assert.is((await leaving(guest)).code, 'not_found', 'leaving twice: no longer a member');
  const members = await membersOf(door, owner, workspace_id);
  assert.equal(
    members.map((m) => m.agent_id),
    [owner.agent_id],
  );
  assert.ok((await typesOf(door, owner)).includes('workspace.left'));
  const listed = await door.call('list_workspaces', {}, guest.api_token);
  assert.equal(listed.workspaces, []);
});

test('two agents redeeming one token at the same moment: exactly one joins', async ({ door }) => {
  const owner = await door.signUp();
  const rivals = await Promise.all([door.signUp(), door.signUp(), door.signUp()]);
  const { workspace_id } = await create(door, owner);
  const token = (await invite(door, owner, workspace_id)).invite_token;
  const answers = await Promise.all(rivals.map((rival) => outcome(redeem(door, rival, token))));
  assert.equal(
    answers.map((a) => ('answer' in a ? 200 : a.refused.status)).sort(),
    [200, 409, 409],
  );
  assert.is((await membersOf(door, owner, workspace_id)).length, 2);
});

test('an invite runs out on time: redeeming answers 410, the list shows it expired, and the job records it', async ({
  server,
  door,
  clock,
}) => {
  const owner = await door.signUp();
  const guest = await door.signUp();
  const { workspace_id } = await create(door, owner);
  const { invite_id, invite_token } = await invite(door, owner, workspace_id, {
    expires_in_hours: 0.5,
  });
  clock.advance(30 * 60_000 - 1);
  const listed = async () =>
    (await door.call('list_invites', { workspace_id }, owner.api_token)).invites.find(
      (i) => i.invite_id === invite_id,
    )?.status;
  assert.is(await listed(), 'pending', 'one millisecond before its time');
  clock.advance(1);
  assert.is(await listed(), 'expired', 'shown expired at once, before the job has run');
  const refused = await door.refusal('redeem_invite', { invite_token }, guest.api_token);
  assert.is(refused.code, 'invite_expired');

  // The expiry job (every minute) records it even though nobody looks.
  clock.advance(60_000);
  await server.scheduler.idle();
  const [row] = await server.services.driver.query<{ status: string }>(
    'select status from invites where invite_id = $1',
    [invite_id],
  );
  assert.is(row?.status, 'expired');
});

test('bad input gets a code: hours out of range, unknown tokens, foreign cursors', async ({
  door,
}) => {
  const owner = await door.signUp();
  const { workspace_id } = await create(door, owner);
  for (const hours of [0, -1, 721, 'soon']) {
    const answer = await door.refusal(
      'create_invite',
      { workspace_id, expires_in_hours: hours } as DirectInput<'create_invite'>,
      owner.api_token,
    );
    assert.is(answer.code, 'invalid_input', `expires_in_hours ${String(hours)}`);
    assert.is(answer.extra.field, 'expires_in_hours');
  }
  for (const token of ['asvi_nonsense', 'asvc_not_an_invite', '']) {
    const answer = await door.refusal('redeem_invite', { invite_token: token }, owner.api_token);
    assert.is(
      answer.code,
      token === '' ? 'invalid_input' : 'not_found',
      `token ${JSON.stringify(token)}`,
    );
  }
  const notUuid = await door.refusal(
    'get_workspace',
    { workspace_id: 'not-a-uuid' },
    owner.api_token,
  );
  assert.is(notUuid.code, 'invalid_input');
  for (const cursor of ['garbage', Buffer.from('i\u0000x').toString('base64url')]) {
    const answer = await door.refusal('list_workspaces', { cursor }, owner.api_token);
    assert.is(answer.code, 'invalid_cursor');
  }
  const badName = await door.refusal('create_workspace', { name: 'a\u0000b' }, owner.api_token);
  assert.is(badName.code, 'invalid_input');
  const extra = await door.refusal(
    'create_workspace',
    { owner: 'me' } as DirectInput<'create_workspace'>,
    owner.api_token,
  );
  assert.is(extra.code, 'unknown_field');
});

test('workspaces are listed a page at a time, each once', async ({ door }) => {
  const owner = await door.signUp();
  const made = new Set<string>();
  for (let i = 0; i < 5; i++) made.add((await create(door, owner)).workspace_id);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<typeof listPage>> = await listPage(door, owner, cursor);
    assert.ok(page.workspaces.length <= 2);
    seen.push(...page.workspaces.map((w) => w.workspace_id));
    cursor = page.next_cursor;
  } while (cursor);
  assert.equal(new Set(seen), made);
  assert.is(seen.length, 5);
});

const listPage = (door: DirectDoor, owner: DirectAgent, cursor: string | null) =>
  door.call('list_workspaces', { limit: 2, ...(cursor ? { cursor } : {}) }, owner.api_token);

test.run();
