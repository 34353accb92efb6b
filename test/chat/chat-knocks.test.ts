import * as assert from 'uvu/assert';
import { KNOCK_LIFE_MS, moveClock } from '../helpers/chat.ts';
import { ofType } from '../helpers/changes.ts';
import type { DirectAgent, DirectDoor, DirectInput } from '../helpers/direct.ts';
import { assertNotPending, directChatSuite, publicOwner, unread } from '../helpers/direct-chat.ts';
import { newChanges } from '../helpers/direct-feed.ts';
import type { Change } from '../helpers/wire-types.ts';

/**
 * Knocks end to end, held to protocol/documents/chat-protocol.md: a knock reaches its target,
 * is listed, and is accepted (a workspace holding both), declined or withdrawn. Through the
 * direct door: chat-live.test.ts takes them through socket.io and MCP.
 */
const test = directChatSuite('knocks, without a transport');

const knockOn = (door: DirectDoor, agent: DirectAgent, workspaceId: string, note: string) =>
  door.call('knock', { workspace_id: workspaceId, note }, agent.api_token);

const listKnocks = (door: DirectDoor, agent: DirectAgent, query: DirectInput<'list_knocks'> = {}) =>
  door.call('list_knocks', query, agent.api_token);

test('a knock on a public workspace reaches its owner with the note, the knocker and from_operator false, and counts as unread', async ({
  server,
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const note = 'I can do this by Friday for 20 USDC';
  const knocked = await knockOn(door, knocker, workspaceId, note);
  assert.equal(knocked, { knock_id: knocked.knock_id, status: 'pending' });

  const received = ofType(await newChanges(door, owner), 'knock.received');
  assert.is(received.length, 1);
  const [change] = received as [Change];
  assert.is(change.workspace_id, workspaceId);
  assert.equal(change.actor, { agent_id: knocker.agent_id, name: knocker.name });
  assert.equal(change.data, {
    knock_id: knocked.knock_id,
    from: { agent_id: knocker.agent_id, name: knocker.name },
    workspace_id: workspaceId,
    note,
    from_operator: false,
    expires_at: new Date(server.services.clock.now() + KNOCK_LIFE_MS).toISOString(),
  });
  assert.is((await unread(door, owner)).knocks, 1);
  assert.is((await unread(door, knocker)).knocks, 0, 'a knock sent is not one received');
});

test('list_knocks shows incoming and outgoing knocks newest first, pages, and filters by status', async ({
  server,
  door,
  clock,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knockers = [await door.signUp(), await door.signUp(), await door.signUp()];
  const ids: string[] = [];
  for (const [i, knocker] of knockers.entries()) {
    const knocked = await knockOn(door, knocker, workspaceId, `note ${i}`);
    ids.push(knocked.knock_id);
    await moveClock(server, clock, 1000);
  }
  const created = server.services.clock.now() - 3000;
  const declined = await door.call(
    'decline_knock',
    { knock_id: ids[0] as string },
    owner.api_token,
  );
  assert.is(declined.status, 'declined');

  const incoming = await listKnocks(door, owner);
  assert.equal(
    incoming.knocks.map((k) => [k.knock_id, k.status]),
    [
      [ids[2], 'pending'],
      [ids[1], 'pending'],
      [ids[0], 'declined'],
    ],
  );
  assert.is(incoming.next_cursor, null);
  assert.equal(incoming.knocks[2], {
    knock_id: ids[0],
    from: { agent_id: knockers[0]?.agent_id, name: knockers[0]?.name },
    to: { agent_id: owner.agent_id, name: owner.name },
    workspace_id: workspaceId,
    note: 'note 0',
    status: 'declined',
    created_at: new Date(created).toISOString(),
    expires_at: new Date(created + KNOCK_LIFE_MS).toISOString(),
    shared_workspace_id: null,
    from_operator: false,
  });
  assert.equal(
    await listKnocks(door, owner, { direction: 'incoming' }),
    incoming,
    'incoming is the default',
  );

  const pending = await listKnocks(door, owner, { status: 'pending' });
  assert.equal(
    pending.knocks.map((k) => k.knock_id),
    [ids[2], ids[1]],
  );
  const onlyDeclined = await listKnocks(door, owner, { status: 'declined' });
  assert.equal(
    onlyDeclined.knocks.map((k) => k.knock_id),
    [ids[0]],
  );
  assert.equal((await listKnocks(door, owner, { status: 'accepted' })).knocks, []);

  const firstPage = await listKnocks(door, owner, { limit: 2 });
  assert.equal(
    firstPage.knocks.map((k) => k.knock_id),
    [ids[2], ids[1]],
  );
  assert.ok(firstPage.next_cursor);
  const secondPage = await listKnocks(door, owner, {
    limit: 2,
    cursor: firstPage.next_cursor as string,
  });
  assert.equal(
    secondPage.knocks.map((k) => k.knock_id),
    [ids[0]],
  );
  assert.is(secondPage.next_cursor, null);

  const outgoing = await listKnocks(door, knockers[0] as DirectAgent, { direction: 'outgoing' });
  assert.equal(
    outgoing.knocks.map((k) => [k.knock_id, k.status]),
    [[ids[0], 'declined']],
  );
  assert.equal((await listKnocks(door, knockers[0] as DirectAgent)).knocks, [], 'none incoming');
  assert.equal((await listKnocks(door, owner, { direction: 'outgoing' })).knocks, []);
  const bad = await door.refusal(
    'list_knocks',
    { status: 'maybe' } as unknown as DirectInput<'list_knocks'>,
    owner.api_token,
  );
  assert.is(bad.code, 'invalid_input');
});

test('accepting a knock makes a private workspace holding both, tells the knocker its id, and both may message there', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  await newChanges(door, knocker);
  const knocked = await knockOn(door, knocker, workspaceId, 'Can we talk about the logo?');
  const accepted = await door.call('accept_knock', { knock_id: knocked.knock_id }, owner.api_token);
  const shared = accepted.workspace_id;
  assert.equal(accepted, {
    knock_id: knocked.knock_id,
    status: 'accepted',
    workspace_id: shared,
  });
  assert.is.not(shared, workspaceId);

  const shown = await door.call('get_workspace', { workspace_id: shared }, knocker.api_token);
  assert.is(shown.visibility, 'private');
  assert.is(shown.owner.agent_id, owner.agent_id, 'the accepting agent owns it');
  assert.equal(
    shown.members.map((m) => [m.agent_id, m.role]).sort(),
    [
      [knocker.agent_id, 'member'],
      [owner.agent_id, 'owner'],
    ].sort(),
  );

  const told = ofType(await newChanges(door, knocker), 'knock.accepted');
  assert.is(told.length, 1);
  assert.is(told[0]?.workspace_id, shared);
  assert.is(told[0]?.data.workspace_id, shared);
  assert.is(told[0]?.data.knock_id, knocked.knock_id);
  assert.equal(told[0]?.actor, { agent_id: owner.agent_id, name: owner.name });

  const outgoing = await listKnocks(door, knocker, { direction: 'outgoing' });
  assert.equal(
    outgoing.knocks.map((k) => [k.status, k.shared_workspace_id]),
    [['accepted', shared]],
  );
  assert.is((await unread(door, owner)).knocks, 0, 'an answered knock is no longer unread');

  await newChanges(door, owner);
  const send = (agent: DirectAgent, text: string) =>
    door.call('send_message', { workspace_id: shared, text }, agent.api_token);
  await send(knocker, 'Hello! Here is my portfolio.');
  await send(owner, 'Thanks, looks good.');
  assert.equal(
    ofType(await newChanges(door, owner), 'message.sent').map((c) => c.data.text),
    ['Hello! Here is my portfolio.'],
  );
  assert.equal(
    ofType(await newChanges(door, knocker), 'message.sent').map((c) => c.data.text),
    ['Thanks, looks good.'],
  );
  const stranger = await door.signUp();
  const hidden = await door.refusal('read_messages', { workspace_id: shared }, stranger.api_token);
  assert.is(hidden.code, 'not_found', 'private to the two of them');
});

test('declining a knock tells the knocker with knock.declined, and makes no workspace', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  await newChanges(door, knocker);
  const knocked = await knockOn(door, knocker, workspaceId, 'Interested?');
  const declined = await door.call(
    'decline_knock',
    { knock_id: knocked.knock_id },
    owner.api_token,
  );
  assert.equal(declined, { knock_id: knocked.knock_id, status: 'declined' });
  const told = ofType(await newChanges(door, knocker), 'knock.declined');
  assert.is(told.length, 1);
  assert.is(told[0]?.data.knock_id, knocked.knock_id);
  assert.equal(told[0]?.actor, { agent_id: owner.agent_id, name: owner.name });
  const workspaces = await door.call('list_workspaces', {}, knocker.api_token);
  assert.equal(workspaces.workspaces, []);
  assert.is((await unread(door, owner)).knocks, 0);
});

test('only the knocker withdraws a knock; the target hears of it and can no longer accept it', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const third = await door.signUp();
  const knocked = await knockOn(door, knocker, workspaceId, 'Still available?');
  const knock_id = knocked.knock_id;
  const byTarget = await door.refusal('withdraw_knock', { knock_id }, owner.api_token);
  assert.is(byTarget.code, 'forbidden');
  const byThird = await door.refusal('withdraw_knock', { knock_id }, third.api_token);
  assert.is(byThird.code, 'not_found');

  const withdrawn = await door.call('withdraw_knock', { knock_id }, knocker.api_token);
  assert.equal(withdrawn, { knock_id, status: 'withdrawn' });
  const told = ofType(await newChanges(door, owner), 'knock.withdrawn');
  assert.equal(
    told.map((c) => c.data.knock_id),
    [knock_id],
  );
  assert.is((await unread(door, owner)).knocks, 0);
  assert.equal(
    (await listKnocks(door, owner)).knocks.map((k) => [k.knock_id, k.status]),
    [[knock_id, 'withdrawn']],
  );
  assertNotPending(await door.refusal('accept_knock', { knock_id }, owner.api_token), 'withdrawn');
  assertNotPending(
    await door.refusal('withdraw_knock', { knock_id }, knocker.api_token),
    'withdrawn',
  );
});

test.run();
