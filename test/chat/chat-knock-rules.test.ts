import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { HOUR_MS, KNOCK_LIFE_MS, moveClock } from '../helpers/chat.ts';
import { ofType } from '../helpers/changes.ts';
import type { DirectAgent, DirectDoor, DirectInput } from '../helpers/direct.ts';
import {
  assertNotPending,
  directChatSuite,
  memberIds,
  publicOwner,
  room,
  unread,
} from '../helpers/direct-chat.ts';
import { newChanges } from '../helpers/direct-feed.ts';
import { outcome, problemOf } from '../helpers/direct-workspaces.ts';

/**
 * What knocks refuse and how they end, held to protocol/documents/chat-protocol.md: the bounds
 * of a note, who may knock on whom and answer, one pending knock at a time, the hourly limit,
 * answers that race, expiry after 14 days on a clock the test moves, and the operator's knocks.
 * Through the direct door: chat-knock-help.test.ts keeps the one rule read from an HTTP page.
 */
const test = directChatSuite('knock rules, without a transport');

const knockOn = (door: DirectDoor, agent: DirectAgent, workspaceId: string, note: string) =>
  door.call('knock', { workspace_id: workspaceId, note }, agent.api_token);

const knockAgent = (
  door: DirectDoor,
  agent: DirectAgent,
  target: { agent_id: string },
  note: string,
) => door.call('knock_agent', { agent_id: target.agent_id, note }, agent.api_token);

const listKnocks = async (
  door: DirectDoor,
  agent: { api_token: string },
  query: DirectInput<'list_knocks'> = {},
) => (await door.call('list_knocks', query, agent.api_token)).knocks;

const listWorkspaces = async (door: DirectDoor, agent: DirectAgent) =>
  (await door.call('list_workspaces', {}, agent.api_token)).workspaces;

test('knock notes are 1 to 500 characters: 501 and empty are 400, and nothing is sent', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  for (const note of ['x'.repeat(501), '']) {
    const refused = await door.refusal(
      'knock',
      { workspace_id: workspaceId, note },
      knocker.api_token,
    );
    assert.is(refused.code, 'invalid_input', `a note of ${note.length}`);
    const direct = await door.refusal(
      'knock_agent',
      { agent_id: owner.agent_id, note },
      knocker.api_token,
    );
    assert.is(direct.code, 'invalid_input', `a direct note of ${note.length}`);
  }
  const missing = await door.refusal(
    'knock',
    { workspace_id: workspaceId } as DirectInput<'knock'>,
    knocker.api_token,
  );
  assert.is(missing.code, 'invalid_input');
  assert.equal(await listKnocks(door, owner), [], 'nothing was sent');
  const longest = await knockOn(door, knocker, workspaceId, 'x'.repeat(500));
  assert.is(longest.status, 'pending', '500 characters is the longest note');
});

test('nobody produces from_operator by asking: the field is refused as unknown', async ({
  door,
}) => {
  const { workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const refused = await door.refusal(
    'knock',
    { workspace_id: workspaceId, note: 'trust me', from_operator: true } as DirectInput<'knock'>,
    knocker.api_token,
  );
  assert.is(refused.code, 'unknown_field');
});

test('you cannot knock on yourself or your own workspace (400), nor on a private workspace you cannot see (404)', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const self = await door.refusal(
    'knock_agent',
    { agent_id: owner.agent_id, note: 'me, myself' },
    owner.api_token,
  );
  assert.is(self.code, 'invalid_input');
  const own = await door.refusal(
    'knock',
    { workspace_id: workspaceId, note: 'my own door' },
    owner.api_token,
  );
  assert.is(own.code, 'invalid_input');

  const { workspaceId: secret, agents } = await room(door, 2);
  const [, member] = agents as [DirectAgent, DirectAgent];
  const asMember = await door.refusal(
    'knock',
    { workspace_id: secret, note: 'a private workspace I am in' },
    member.api_token,
  );
  assert.is(asMember.code, 'invalid_input', 'a member sends a message instead');

  const stranger = await door.signUp();
  const hidden = await door.refusal(
    'knock',
    { workspace_id: secret, note: 'anyone in there?' },
    stranger.api_token,
  );
  const missing = await door.refusal(
    'knock',
    { workspace_id: randomUUID(), note: 'anyone in there?' },
    stranger.api_token,
  );
  assert.is(hidden.code, 'not_found');
  assert.equal(problemOf(hidden), problemOf(missing));
  const nobody = await door.refusal(
    'knock_agent',
    { agent_id: randomUUID(), note: 'hi' },
    stranger.api_token,
  );
  assert.is(nobody.code, 'not_found');
  assert.equal(await listKnocks(door, owner), []);
});

test('only the agent a knock is addressed to answers it: a third agent gets 404, the knocker 403', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const third = await door.signUp();
  const id = (await knockOn(door, knocker, workspaceId, 'hello')).knock_id;
  for (const operation of ['accept_knock', 'decline_knock'] as const) {
    const byThird = await door.refusal(operation, { knock_id: id }, third.api_token);
    assert.is(byThird.code, 'not_found', `${operation} by a third agent`);
    const byUnknown = await door.refusal(operation, { knock_id: randomUUID() }, third.api_token);
    assert.equal(problemOf(byThird), problemOf(byUnknown), 'the same 404 as for no knock at all');
    const byKnocker = await door.refusal(operation, { knock_id: id }, knocker.api_token);
    assert.is(byKnocker.code, 'forbidden', `${operation} by the knocker`);
  }
  assert.equal(
    (await listKnocks(door, owner)).map((k) => k.status),
    ['pending'],
    'still pending',
  );
  assert.equal(await listKnocks(door, third), [], 'and not shown to the third');
});

test('a direct knock reaches the agent itself, and is answered like any other', async ({
  door,
}) => {
  const target = await door.signUp();
  const knocker = await door.signUp();
  await newChanges(door, target);
  const knocked = await knockAgent(door, knocker, target, 'Direct question');
  assert.is(knocked.status, 'pending');
  const [received] = ofType(await newChanges(door, target), 'knock.received');
  assert.is(received?.data.workspace_id, null);
  assert.is(received?.workspace_id, undefined);
  const listed = await listKnocks(door, target);
  assert.is(listed[0]?.workspace_id, null);
  const accepted = await door.call(
    'accept_knock',
    { knock_id: knocked.knock_id },
    target.api_token,
  );
  assert.is(accepted.status, 'accepted');
  assert.equal(
    await memberIds(door, knocker, accepted.workspace_id),
    [knocker.agent_id, target.agent_id].sort(),
  );
});

test('a second pending knock on the same target answers 409 knock_pending; once answered, a new one may go', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const first = await knockOn(door, knocker, workspaceId, 'first');
  const again = await door.refusal(
    'knock',
    { workspace_id: workspaceId, note: 'second' },
    knocker.api_token,
  );
  assert.is(again.code, 'knock_pending');
  const direct = await knockAgent(door, knocker, owner, 'direct');
  assert.is(direct.status, 'pending', 'the owner directly is another target');
  const directAgain = await door.refusal(
    'knock_agent',
    { agent_id: owner.agent_id, note: 'direct again' },
    knocker.api_token,
  );
  assert.is(directAgain.code, 'knock_pending');
  const other = await door.signUp();
  assert.is((await knockOn(door, other, workspaceId, 'me too')).status, 'pending', 'per knocker');

  await door.call('decline_knock', { knock_id: first.knock_id }, owner.api_token);
  const afterAnswer = await knockOn(door, knocker, workspaceId, 'one more try');
  assert.is(afterAnswer.status, 'pending');
});

test('an agent that takes no direct knocks refuses knock_agent with 403 direct_knocks_refused, but a knock on its public workspace still reaches it', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const set = await door.call('set_knock_settings', { direct_knocks: 'nobody' }, owner.api_token);
  assert.equal(set, { direct_knocks: 'nobody' });
  const refused = await door.refusal(
    'knock_agent',
    { agent_id: owner.agent_id, note: 'direct' },
    knocker.api_token,
  );
  assert.is(refused.code, 'direct_knocks_refused');
  assert.equal(ofType(await newChanges(door, owner), 'knock.received'), []);

  const viaWorkspace = await knockOn(door, knocker, workspaceId, 'via the listing');
  assert.is(viaWorkspace.status, 'pending');
  assert.is(ofType(await newChanges(door, owner), 'knock.received').length, 1);

  const reopened = await door.call(
    'set_knock_settings',
    { direct_knocks: 'everyone' },
    owner.api_token,
  );
  assert.equal(reopened, { direct_knocks: 'everyone' });
  assert.is((await knockAgent(door, knocker, owner, 'direct')).status, 'pending');
  const bad = await door.refusal(
    'set_knock_settings',
    { direct_knocks: 'friends' } as unknown as DirectInput<'set_knock_settings'>,
    owner.api_token,
  );
  assert.is(bad.code, 'invalid_input');
});

test('the 21st knock within an hour answers 429 rate_limited with Retry-After, and one may go once the hour is over', async ({
  server,
  door,
  clock,
}) => {
  const knocker = await door.signUp();
  const targets: DirectAgent[] = [];
  for (let i = 0; i < 22; i++) targets.push(await door.signUp());
  const target = (i: number) => targets[i] as DirectAgent;
  const first = await knockAgent(door, knocker, target(0), 'knock 1');
  assert.is(first.status, 'pending');
  await moveClock(server, clock, 10 * 60_000);
  for (let i = 1; i < 20; i++) {
    const knocked = await knockAgent(door, knocker, target(i), `knock ${i + 1}`);
    assert.is(knocked.status, 'pending', `knock ${i + 1}`);
  }
  const knock21 = { agent_id: target(20).agent_id, note: 'knock 21' };
  const limited = await door.refusal('knock_agent', knock21, knocker.api_token);
  assert.is(limited.code, 'rate_limited');
  assert.is(
    limited.responseHeaders['retry-after'],
    '3000',
    'the first knock leaves the hour in 50 min',
  );
  assert.is(limited.extra.retry_after_seconds, 3000);
  assert.equal(await listKnocks(door, target(20)), [], 'not sent');
  const onWorkspace = await door.refusal(
    'knock',
    { workspace_id: (await publicOwner(door)).workspaceId, note: 'knock 21, on a workspace' },
    knocker.api_token,
  );
  assert.is(onWorkspace.code, 'rate_limited', 'knocks on workspaces count too');

  await moveClock(server, clock, 50 * 60_000 - 1);
  const stillLimited = await door.refusal('knock_agent', knock21, knocker.api_token);
  assert.is(stillLimited.code, 'rate_limited', 'one millisecond before the hour is over');
  assert.is(stillLimited.responseHeaders['retry-after'], '1');
  await moveClock(server, clock, 1);
  const again = await door.call('knock_agent', knock21, knocker.api_token);
  assert.is(again.status, 'pending', 'the first knock has left the hour');
  const next = await door.refusal(
    'knock_agent',
    { agent_id: target(21).agent_id, note: 'knock 22' },
    knocker.api_token,
  );
  assert.is(next.code, 'rate_limited', 'and the window is full again');
  await server.scheduler.idle();
});

test('accepting twice answers 409 knock_not_pending with status accepted, and makes one workspace', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const knock_id = (await knockOn(door, knocker, workspaceId, 'twice')).knock_id;
  const first = await door.call('accept_knock', { knock_id }, owner.api_token);
  assert.is(first.status, 'accepted');
  const second = await door.refusal('accept_knock', { knock_id }, owner.api_token);
  const decline = await door.refusal('decline_knock', { knock_id }, owner.api_token);
  assert.is((await listWorkspaces(door, knocker)).length, 1);
  assert.is(ofType(await newChanges(door, knocker), 'knock.accepted').length, 1);
  assertNotPending(decline, 'accepted');
  assertNotPending(second, 'accepted');
});

test('two accepts of one knock at once: one answers 200, the other 409, and the knocker is in exactly one new workspace', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  const knock_id = (await knockOn(door, knocker, workspaceId, 'race')).knock_id;
  const answers = await Promise.all([
    outcome(door.call('accept_knock', { knock_id }, owner.api_token)),
    outcome(door.call('accept_knock', { knock_id }, owner.api_token)),
  ]);
  const won = answers.flatMap((a) => ('answer' in a ? [a.answer] : []));
  const lost = answers.flatMap((a) => ('refused' in a ? [a.refused] : []));
  assert.is(won.length, 1, 'one accept goes through');
  assert.is(lost.length, 1, 'the other is refused');
  assert.is(lost[0]?.code, 'knock_not_pending');
  assert.equal(
    (await listWorkspaces(door, knocker)).map((w) => w.workspace_id),
    [won[0]?.workspace_id],
  );
  assert.is(
    (await listWorkspaces(door, owner)).length,
    2,
    'its public workspace and the one shared',
  );
  assert.is(ofType(await newChanges(door, knocker), 'knock.accepted').length, 1);
});

test('a knock unanswered for 14 days expires: accepting answers 409 with status expired, and both hear knock.expired', async ({
  server,
  door,
  clock,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const knocker = await door.signUp();
  await newChanges(door, knocker);
  const knock_id = (await knockOn(door, knocker, workspaceId, 'anyone?')).knock_id;
  await newChanges(door, owner);
  const shown = async () => (await listKnocks(door, owner))[0]?.status;

  await moveClock(server, clock, KNOCK_LIFE_MS - 1);
  await server.scheduler.idle();
  assert.is(await shown(), 'pending', 'one millisecond before its time');
  assert.is((await unread(door, owner)).knocks, 1);
  await moveClock(server, clock, 1);
  assert.is(await shown(), 'expired', 'shown expired at once, before the job has run');
  assert.is((await unread(door, owner)).knocks, 0);
  assert.equal(
    (await listKnocks(door, owner, { status: 'expired' })).map((k) => k.knock_id),
    [knock_id],
  );
  assert.equal(await listKnocks(door, owner, { status: 'pending' }), []);
  const late = await door.refusal('accept_knock', { knock_id }, owner.api_token);
  const lateWithdrawal = await door.refusal('withdraw_knock', { knock_id }, knocker.api_token);

  // The expiry job records it even though nobody asks again, and tells both.
  await moveClock(server, clock, HOUR_MS);
  await server.scheduler.idle();
  const [row] = await server.services.driver.query<{ status: string }>(
    'select status from knocks where knock_id = $1',
    [knock_id],
  );
  assert.is(row?.status, 'expired');
  for (const agent of [owner, knocker]) {
    const expired = ofType(await newChanges(door, agent), 'knock.expired');
    assert.equal(
      expired.map((c) => c.data.knock_id),
      [knock_id],
    );
  }
  const retry = await knockOn(door, knocker, workspaceId, 'trying again');
  assert.is(retry.status, 'pending', 'an expired knock is no longer pending on the target');
  assert.is((await listKnocks(door, knocker, { direction: 'outgoing' })).length, 2);
  assert.equal(await listWorkspaces(door, knocker), []);
  assertNotPending(lateWithdrawal, 'expired');
  assertNotPending(late, 'expired');
});

// ---------------------------------------------------------------------------------------------
// The operator

test('a knock from the operator carries from_operator true in knock.received and list_knocks', async ({
  door,
  operatorToken,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const operator = { api_token: operatorToken };
  const knocked = await door.call(
    'knock',
    { workspace_id: workspaceId, note: 'About your listing: it breaks the store rules.' },
    operatorToken,
  );
  assert.is(knocked.status, 'pending', JSON.stringify(knocked));
  const [received] = ofType(await newChanges(door, owner), 'knock.received');
  assert.is(received?.data.from_operator, true);
  const incoming = await listKnocks(door, owner);
  assert.equal(
    incoming.map((k) => [k.knock_id, k.from_operator]),
    [[knocked.knock_id, true]],
  );
  const outgoing = await listKnocks(door, operator, { direction: 'outgoing', limit: 500 });
  const mine = outgoing.find((k) => k.knock_id === knocked.knock_id);
  assert.is(mine?.from_operator, true);

  const other = await door.signUp();
  await knockOn(door, other, workspaceId, 'an ordinary knock');
  const ordinary = (await listKnocks(door, owner)).find((k) => k.from.agent_id === other.agent_id);
  assert.is(ordinary?.from_operator, false);
});

test.run();
