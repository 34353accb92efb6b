import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { KNOCK_LIFE_MS, moveClock } from '../helpers/chat.ts';
import { ofType } from '../helpers/changes.ts';
import type { DirectAgent, DirectDoor, DirectInput } from '../helpers/direct.ts';
import { directChatSuite, publicOwner } from '../helpers/direct-chat.ts';
import { newChanges } from '../helpers/direct-feed.ts';
import { problemOf } from '../helpers/direct-workspaces.ts';
import { repairIn } from '../helpers/store.ts';

/**
 * The knock reads, held to protocol/documents/chat-protocol.md: one knock by its id (its knocker
 * and its target only), one's knock settings (and in whoami), and a knock that names the listing
 * it answers (one of the knocked party's, else 422 listing_not_theirs and nothing sent). Through
 * the direct door: chat-knock-reads.test.ts takes them through MCP.
 */
const test = directChatSuite('knock reads, without a transport');

const getKnock = (door: DirectDoor, agent: { api_token: string }, knockId: string) =>
  door.call('get_knock', { knock_id: knockId }, agent.api_token);

const getSettings = (door: DirectDoor, agent: DirectAgent) =>
  door.call('get_knock_settings', {}, agent.api_token);

const listKnocks = async (
  door: DirectDoor,
  agent: DirectAgent,
  query: DirectInput<'list_knocks'> = {},
) => (await door.call('list_knocks', query, agent.api_token)).knocks;

/** A listing posted by `agent` (in `workspaceId` when given); answers its id and workspace. */
async function listingOf(
  door: DirectDoor,
  agent: DirectAgent,
  place: string,
  workspaceId?: string,
) {
  const posted = await door.call(
    'post_listing',
    repairIn(
      place,
      workspaceId ? { workspace_id: workspaceId } : {},
    ) as DirectInput<'post_listing'>,
    agent.api_token,
  );
  return { listingId: posted.listing_id, workspaceId: posted.workspace_id };
}

test('get_knock shows a knock to its knocker and its target exactly as list_knocks does, with its status now', async ({
  server,
  door,
  clock,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const knocked = await door.call(
    'knock',
    { workspace_id: workspaceId, note: 'about your workspace' },
    knocker.api_token,
  );
  const knockId = knocked.knock_id;

  const [listed] = await listKnocks(door, owner);
  for (const reader of [owner, knocker]) {
    const shown = await getKnock(door, reader, knockId);
    assert.equal(shown, listed);
  }
  assert.is(listed?.status, 'pending');
  assert.not.ok('listing_id' in (listed ?? {}), 'no listing named, none shown');

  const direct = await door.call(
    'knock_agent',
    { agent_id: owner.agent_id, note: 'directly' },
    knocker.api_token,
  );
  assert.is((await getKnock(door, owner, direct.knock_id)).workspace_id, null);

  const declined = await door.call('decline_knock', { knock_id: knockId }, owner.api_token);
  assert.is(declined.status, 'declined');
  assert.is((await getKnock(door, knocker, knockId)).status, 'declined');

  await moveClock(server, clock, KNOCK_LIFE_MS + 1);
  assert.is(
    (await getKnock(door, knocker, direct.knock_id)).status,
    'expired',
    'a pending knock past its time shows expired',
  );
});

test('get_knock answers anyone but its knocker and target the same 404 as a knock that does not exist', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const stranger = await door.signUp();
  const knockId = (
    await door.call('knock', { workspace_id: workspaceId, note: 'hello' }, knocker.api_token)
  ).knock_id;

  const hidden = await door.refusal('get_knock', { knock_id: knockId }, stranger.api_token);
  const missing = await door.refusal('get_knock', { knock_id: randomUUID() }, stranger.api_token);
  assert.is(hidden.code, 'not_found');
  assert.equal(
    problemOf(hidden),
    problemOf(missing),
    'nothing tells a hidden knock from a missing one',
  );
  assert.equal(
    problemOf(await door.refusal('get_knock', { knock_id: randomUUID() }, owner.api_token)),
    problemOf(missing),
    'the same for the target',
  );

  const noToken = await door.refusal('get_knock', { knock_id: knockId });
  assert.is(noToken.code, 'unauthorized');
  const badId = await door.refusal('get_knock', { knock_id: 'not-a-uuid' }, owner.api_token);
  assert.is(badId.code, 'invalid_input');
});

test('get_knock_settings answers what set_knock_settings set, and whoami shows the same as knock_settings', async ({
  door,
}) => {
  const agent = await door.signUp();
  assert.equal(await getSettings(door, agent), { direct_knocks: 'everyone' });
  const before = await door.call('whoami', {}, agent.api_token);
  assert.equal(before.knock_settings, { direct_knocks: 'everyone' });
  assert.type(before.service_version, 'string', 'whoami keeps its fields');

  const set = await door.call('set_knock_settings', { direct_knocks: 'nobody' }, agent.api_token);
  const read = await getSettings(door, agent);
  assert.equal(read, set);
  assert.equal((await door.call('whoami', {}, agent.api_token)).knock_settings, {
    direct_knocks: 'nobody',
  });

  const other = await door.signUp();
  assert.equal(
    await getSettings(door, other),
    { direct_knocks: 'everyone' },
    "one's own settings only",
  );
  const extra = await door.refusal(
    'get_knock_settings',
    { direct_knocks: 'nobody' } as unknown as DirectInput<'get_knock_settings'>,
    agent.api_token,
  );
  assert.is(extra.code, 'unknown_field');
  assert.is((await door.refusal('get_knock_settings', {})).code, 'unauthorized');
});

test('a knock naming a listing in the workspace keeps it: knock.received, list_knocks and get_knock show its id and name', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const { listingId } = await listingOf(door, owner, 'Berlin', workspaceId);
  await newChanges(door, owner);
  const knocker = await door.signUp();
  const knocked = await door.call(
    'knock',
    { workspace_id: workspaceId, note: 'I need this', listing_id: listingId },
    knocker.api_token,
  );

  const [received] = ofType(await newChanges(door, owner), 'knock.received');
  assert.is(received?.data.listing_id, listingId);
  assert.is(received?.data.listing_name, 'Bicycle repair in Berlin');

  const shown = await getKnock(door, owner, knocked.knock_id);
  assert.is(shown.listing_id, listingId);
  assert.is(shown.listing_name, 'Bicycle repair in Berlin');
  assert.equal(await listKnocks(door, owner), [shown]);
  assert.equal(await listKnocks(door, knocker, { direction: 'outgoing' }), [shown]);

  // The listing renamed: the knock shows its name now; deleted: the id stays, the name is null.
  await door.call(
    'post_listing',
    {
      ...repairIn('Berlin', { name: 'Bicycles mended' }),
      listing_id: listingId,
    } as DirectInput<'post_listing'>,
    owner.api_token,
  );
  assert.is((await getKnock(door, knocker, knocked.knock_id)).listing_name, 'Bicycles mended');
  await door.call('delete_listing', { listing_id: listingId }, owner.api_token);
  const after = await getKnock(door, knocker, knocked.knock_id);
  assert.is(after.listing_id, listingId);
  assert.is(after.listing_name, null);
});

test('a direct knock naming a listing the agent wrote keeps it', async ({ door }) => {
  const target = await door.signUp();
  const { listingId } = await listingOf(door, target, 'Paris');
  await newChanges(door, target);
  const knocker = await door.signUp();
  const knocked = await door.call(
    'knock_agent',
    { agent_id: target.agent_id, note: 'about your repairs', listing_id: listingId },
    knocker.api_token,
  );
  const [received] = ofType(await newChanges(door, target), 'knock.received');
  assert.equal(
    [received?.data.listing_id, received?.data.listing_name],
    [listingId, 'Bicycle repair in Paris'],
  );
  const shown = await getKnock(door, knocker, knocked.knock_id);
  assert.equal([shown.listing_id, shown.listing_name], [listingId, 'Bicycle repair in Paris']);
});

test('a listing_id that is unknown, deleted, in another workspace or by another agent answers 422 listing_not_theirs and sends nothing', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const other = await door.signUp();
  const inOwnWorkspace = await listingOf(door, owner, 'Rome');
  assert.ok(inOwnWorkspace.workspaceId !== workspaceId);
  const byOther = await listingOf(door, other, 'Oslo');
  const gone = await listingOf(door, owner, 'Lima', workspaceId);
  await door.call('delete_listing', { listing_id: gone.listingId }, owner.api_token);
  await newChanges(door, owner);
  const knocker = await door.signUp();

  const onWorkspace = (listing_id: string) =>
    door.refusal('knock', { workspace_id: workspaceId, note: 'x', listing_id }, knocker.api_token);
  const onAgent = (target: DirectAgent, listing_id: string) =>
    door.refusal(
      'knock_agent',
      { agent_id: target.agent_id, note: 'x', listing_id },
      knocker.api_token,
    );
  const refusals = [
    onWorkspace(randomUUID()),
    onWorkspace(gone.listingId),
    onWorkspace(inOwnWorkspace.listingId),
    onWorkspace(byOther.listingId),
    onAgent(owner, byOther.listingId),
    onAgent(owner, gone.listingId),
    onAgent(other, inOwnWorkspace.listingId),
  ];
  for (const refused of await Promise.all(refusals)) {
    assert.is(refused.code, 'listing_not_theirs', refused.message);
    assert.is(refused.extra.field, 'listing_id');
  }
  const notUuid = await onWorkspace('abc');
  assert.is(notUuid.code, 'invalid_input');

  assert.equal(await listKnocks(door, knocker, { direction: 'outgoing' }), []);
  assert.equal(ofType(await newChanges(door, owner), 'knock.received'), []);
  assert.equal(ofType(await newChanges(door, other), 'knock.received'), []);
  // Refusals are not knocks: the ones that fit still go (the hourly limit counts none of these).
  const fits = await door.call(
    'knock',
    { workspace_id: workspaceId, note: 'x' },
    knocker.api_token,
  );
  assert.is(fits.status, 'pending');
});

test.run();
