import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import {
  answerKnock,
  assertNotPending,
  chatSuite,
  HOUR_MS,
  knockAgent,
  knockOn,
  KNOCK_LIFE_MS,
  listKnocks,
  memberIds,
  moveClock,
  publicOwner,
  unread,
} from '../helpers/chat.ts';
import { callJson as call, type JsonAnswer } from '../helpers/http.ts';
import { room } from '../helpers/rooms.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';

/**
 * What knocks refuse and how they end, held to protocol/documents/chat-protocol.md: the bounds
 * of a note, who may knock on whom and answer, one pending knock at a time, the hourly limit,
 * answers that race, expiry after 14 days on a clock the test moves, and the operator's knocks.
 */
const test = chatSuite('knock rules through HTTP');

test('knock notes are 1 to 500 characters: 501 and empty are 400, and nothing is sent', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  for (const note of ['x'.repeat(501), '']) {
    const refused = await knockOn(server, knocker, workspaceId, note);
    assert.is(refused.status, 400, `a note of ${note.length}`);
    assert.is(problemOf(refused).code, 'invalid_input');
    const direct = await knockAgent(server, knocker, owner, note);
    assert.is(direct.status, 400, `a direct note of ${note.length}`);
  }
  const missing = await call(
    server,
    'POST',
    `/workspaces/${workspaceId}/knock`,
    knocker.api_token,
    {},
  );
  assert.is(missing.status, 400);
  assert.equal((await listKnocks(server, owner)).body.knocks, [], 'nothing was sent');
  const longest = await knockOn(server, knocker, workspaceId, 'x'.repeat(500));
  assert.is(longest.status, 201, '500 characters is the longest note');
});

test('nobody produces from_operator by asking: the field is refused as unknown', async ({
  server,
}) => {
  const { workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const answer = await call(server, 'POST', `/workspaces/${workspaceId}/knock`, knocker.api_token, {
    note: 'trust me',
    from_operator: true,
  });
  assert.is(answer.status, 400);
});

test('you cannot knock on yourself or your own workspace (400), nor on a private workspace you cannot see (404)', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const self = await knockAgent(server, owner, owner, 'me, myself');
  assert.is(self.status, 400);
  assert.is(problemOf(self).code, 'invalid_input');
  const own = await knockOn(server, owner, workspaceId, 'my own door');
  assert.is(own.status, 400);
  assert.is(problemOf(own).code, 'invalid_input');

  const { workspaceId: secret, agents } = await room(server, 2);
  const [, member] = agents as [Agent, Agent];
  const asMember = await knockOn(server, member, secret, 'a private workspace I am in');
  assert.is(asMember.status, 400, 'a member sends a message instead');
  assert.is(problemOf(asMember).code, 'invalid_input');

  const stranger = await server.signUp();
  const hidden = await knockOn(server, stranger, secret, 'anyone in there?');
  const missing = await knockOn(server, stranger, randomUUID(), 'anyone in there?');
  assert.is(hidden.status, 404);
  assert.equal(hidden.body, missing.body);
  const nobody = await knockAgent(server, stranger, { agent_id: randomUUID(), name: '' }, 'hi');
  assert.is(nobody.status, 404);
  assert.equal((await listKnocks(server, owner)).body.knocks, []);
});

test('only the agent a knock is addressed to answers it: a third agent gets 404, the knocker 403', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const third = await server.signUp();
  const id = (await knockOn(server, knocker, workspaceId, 'hello')).body.knock_id;
  for (const verb of ['accept', 'decline'] as const) {
    const byThird = await answerKnock(server, third, id, verb);
    assert.is(byThird.status, 404, `${verb} by a third agent`);
    const byUnknown = await answerKnock(server, third, randomUUID(), verb);
    assert.equal(byThird.body, byUnknown.body, 'the same 404 as for no knock at all');
    const byKnocker = await answerKnock(server, knocker, id, verb);
    assert.is(byKnocker.status, 403, `${verb} by the knocker`);
    assert.is(problemOf(byKnocker).code, 'forbidden');
  }
  assert.equal(
    (await listKnocks(server, owner)).body.knocks.map((k) => k.status),
    ['pending'],
    'still pending',
  );
  assert.equal((await listKnocks(server, third)).body.knocks, [], 'and not shown to the third');
});

test('a direct knock reaches the agent itself, and is answered like any other', async ({
  server,
}) => {
  const target = await server.signUp();
  const knocker = await server.signUp();
  await newChanges(server, target);
  const knocked = await knockAgent(server, knocker, target, 'Direct question');
  assert.is(knocked.status, 201);
  const [received] = ofType(await newChanges(server, target), 'knock.received');
  assert.is(received?.data.workspace_id, null);
  assert.is(received?.workspace_id, undefined);
  const listed = await listKnocks(server, target);
  assert.is(listed.body.knocks[0]?.workspace_id, null);
  const accepted = await answerKnock(server, target, knocked.body.knock_id, 'accept');
  assert.is(accepted.status, 200);
  assert.equal(
    await memberIds(server, knocker, accepted.body.workspace_id as string),
    [knocker.agent_id, target.agent_id].sort(),
  );
});

test('a second pending knock on the same target answers 409 knock_pending; once answered, a new one may go', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const first = await knockOn(server, knocker, workspaceId, 'first');
  assert.is(first.status, 201);
  const again = await knockOn(server, knocker, workspaceId, 'second');
  assert.is(again.status, 409);
  assert.is(problemOf(again).code, 'knock_pending');
  const direct = await knockAgent(server, knocker, owner, 'direct');
  assert.is(direct.status, 201, 'the owner directly is another target');
  const directAgain = await knockAgent(server, knocker, owner, 'direct again');
  assert.is(directAgain.status, 409);
  assert.is(problemOf(directAgain).code, 'knock_pending');
  const other = await server.signUp();
  assert.is((await knockOn(server, other, workspaceId, 'me too')).status, 201, 'per knocker');

  await answerKnock(server, owner, first.body.knock_id, 'decline');
  const afterAnswer = await knockOn(server, knocker, workspaceId, 'one more try');
  assert.is(afterAnswer.status, 201);
});

test('an agent that takes no direct knocks refuses knock_agent with 403 direct_knocks_refused, but a knock on its public workspace still reaches it', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const set = await call(server, 'PUT', '/whoami/knock-settings', owner.api_token, {
    direct_knocks: 'nobody',
  });
  assert.is(set.status, 200);
  assert.equal(set.body, { direct_knocks: 'nobody' });
  const refused = await knockAgent(server, knocker, owner, 'direct');
  assert.is(refused.status, 403);
  assert.is(problemOf(refused).code, 'direct_knocks_refused');
  assert.equal(ofType(await newChanges(server, owner), 'knock.received'), []);

  const viaWorkspace = await knockOn(server, knocker, workspaceId, 'via the listing');
  assert.is(viaWorkspace.status, 201);
  assert.is(ofType(await newChanges(server, owner), 'knock.received').length, 1);

  const reopened = await call(server, 'PUT', '/whoami/knock-settings', owner.api_token, {
    direct_knocks: 'everyone',
  });
  assert.equal(reopened.body, { direct_knocks: 'everyone' });
  assert.is((await knockAgent(server, knocker, owner, 'direct')).status, 201);
  const bad = await call(server, 'PUT', '/whoami/knock-settings', owner.api_token, {
    direct_knocks: 'friends',
  });
  assert.is(bad.status, 400);
});

test('the 21st knock within an hour answers 429 rate_limited with Retry-After, and one may go once the hour is over', async ({
  server,
  clock,
}) => {
  const knocker = await server.signUp();
  const targets: Agent[] = [];
  for (let i = 0; i < 22; i++) targets.push(await server.signUp());
  const first = await knockAgent(server, knocker, targets[0] as Agent, 'knock 1');
  assert.is(first.status, 201);
  await moveClock(server, clock, 10 * 60_000);
  for (let i = 1; i < 20; i++) {
    const knocked = await knockAgent(server, knocker, targets[i] as Agent, `knock ${i + 1}`);
    assert.is(knocked.status, 201, `knock ${i + 1}`);
  }
  const limited = await knockAgent(server, knocker, targets[20] as Agent, 'knock 21');
  assert.is(limited.status, 429);
  assert.is(problemOf(limited).code, 'rate_limited');
  assert.is(
    limited.headers.get('retry-after'),
    '3000',
    'the first knock leaves the hour in 50 min',
  );
  assert.is(problemOf(limited).retry_after_seconds, 3000);
  assert.equal((await listKnocks(server, targets[20] as Agent)).body.knocks, [], 'not sent');
  const onWorkspace = await knockOn(
    server,
    knocker,
    (await publicOwner(server)).workspaceId,
    'knock 21, on a workspace',
  );
  assert.is(onWorkspace.status, 429, 'knocks on workspaces count too');

  await moveClock(server, clock, 50 * 60_000 - 1);
  const stillLimited = await knockAgent(server, knocker, targets[20] as Agent, 'knock 21');
  assert.is(stillLimited.status, 429, 'one millisecond before the hour is over');
  assert.is(stillLimited.headers.get('retry-after'), '1');
  await moveClock(server, clock, 1);
  const again = await knockAgent(server, knocker, targets[20] as Agent, 'knock 21');
  assert.is(again.status, 201, 'the first knock has left the hour');
  const next = await knockAgent(server, knocker, targets[21] as Agent, 'knock 22');
  assert.is(next.status, 429, 'and the window is full again');
  await server.scheduler.idle();
});

test('accepting twice answers 409 knock_not_pending with status accepted, and makes one workspace', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const id = (await knockOn(server, knocker, workspaceId, 'twice')).body.knock_id;
  const first = await answerKnock(server, owner, id, 'accept');
  assert.is(first.status, 200);
  const second = await answerKnock(server, owner, id, 'accept');
  const decline = await answerKnock(server, owner, id, 'decline');
  const listed = await call<{ workspaces: unknown[] }>(
    server,
    'GET',
    '/workspaces',
    knocker.api_token,
  );
  assert.is(listed.body.workspaces.length, 1);
  assert.is(ofType(await newChanges(server, knocker), 'knock.accepted').length, 1);
  assertNotPending(decline, 'accepted');
  assertNotPending(second, 'accepted');
});

test('two accepts of one knock at once: one answers 200, the other 409, and the knocker is in exactly one new workspace', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const id = (await knockOn(server, knocker, workspaceId, 'race')).body.knock_id;
  const answers = await Promise.all([
    answerKnock(server, owner, id, 'accept'),
    answerKnock(server, owner, id, 'accept'),
  ]);
  assert.equal(answers.map((a) => a.status).sort(), [200, 409]);
  const won = answers.find((a) => a.status === 200) as JsonAnswer<{ workspace_id?: string }>;
  const lost = answers.find((a) => a.status === 409) as JsonAnswer<unknown>;
  assert.is(problemOf(lost).code, 'knock_not_pending');
  const listed = await call<{ workspaces: { workspace_id: string }[] }>(
    server,
    'GET',
    '/workspaces',
    knocker.api_token,
  );
  assert.equal(
    listed.body.workspaces.map((w) => w.workspace_id),
    [won.body.workspace_id],
  );
  const owners = await call<{ workspaces: unknown[] }>(
    server,
    'GET',
    '/workspaces',
    owner.api_token,
  );
  assert.is(owners.body.workspaces.length, 2, 'its public workspace and the one shared');
  assert.is(ofType(await newChanges(server, knocker), 'knock.accepted').length, 1);
});

test('a knock unanswered for 14 days expires: accepting answers 409 with status expired, and both hear knock.expired', async ({
  server,
  clock,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  await newChanges(server, knocker);
  const id = (await knockOn(server, knocker, workspaceId, 'anyone?')).body.knock_id;
  await newChanges(server, owner);
  const shown = async () => (await listKnocks(server, owner)).body.knocks[0]?.status;

  await moveClock(server, clock, KNOCK_LIFE_MS - 1);
  await server.scheduler.idle();
  assert.is(await shown(), 'pending', 'one millisecond before its time');
  assert.is((await unread(server, owner)).knocks, 1);
  await moveClock(server, clock, 1);
  assert.is(await shown(), 'expired', 'shown expired at once, before the job has run');
  assert.is((await unread(server, owner)).knocks, 0);
  assert.equal(
    (await listKnocks(server, owner, '?status=expired')).body.knocks.map((k) => k.knock_id),
    [id],
  );
  assert.equal((await listKnocks(server, owner, '?status=pending')).body.knocks, []);
  const late = await answerKnock(server, owner, id, 'accept');
  const lateWithdrawal = await answerKnock(server, knocker, id, 'withdraw');

  // The expiry job records it even though nobody asks again, and tells both.
  await moveClock(server, clock, HOUR_MS);
  await server.scheduler.idle();
  const [row] = await server.services.driver.query<{ status: string }>(
    'select status from knocks where knock_id = $1',
    [id],
  );
  assert.is(row?.status, 'expired');
  for (const agent of [owner, knocker]) {
    const expired = ofType(await newChanges(server, agent), 'knock.expired');
    assert.equal(
      expired.map((c) => c.data.knock_id),
      [id],
    );
  }
  const retry = await knockOn(server, knocker, workspaceId, 'trying again');
  assert.is(retry.status, 201, 'an expired knock is no longer pending on the target');
  assert.is((await listKnocks(server, knocker, '?direction=outgoing')).body.knocks.length, 2);
  assert.equal(
    await call<{ workspaces: unknown[] }>(server, 'GET', '/workspaces', knocker.api_token).then(
      (a) => a.body.workspaces,
    ),
    [],
  );
  assertNotPending(lateWithdrawal, 'expired');
  assertNotPending(late, 'expired');
});

// ---------------------------------------------------------------------------------------------
// The operator

test('a knock from the operator carries from_operator true in knock.received and list_knocks', async ({
  server,
  operatorToken,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const operator = { api_token: operatorToken };
  const knocked = await call<{ knock_id: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/knock`,
    operatorToken,
    { note: 'About your listing: it breaks the store rules.' },
  );
  assert.is(knocked.status, 201, JSON.stringify(knocked.body));
  const [received] = ofType(await newChanges(server, owner), 'knock.received');
  assert.is(received?.data.from_operator, true);
  const incoming = await listKnocks(server, owner);
  assert.equal(
    incoming.body.knocks.map((k) => [k.knock_id, k.from_operator]),
    [[knocked.body.knock_id, true]],
  );
  const outgoing = await listKnocks(server, operator, '?direction=outgoing&limit=500');
  const mine = outgoing.body.knocks.find((k) => k.knock_id === knocked.body.knock_id);
  assert.is(mine?.from_operator, true);

  const other = await server.signUp();
  await knockOn(server, other, workspaceId, 'an ordinary knock');
  const ordinary = (await listKnocks(server, owner)).body.knocks.find(
    (k) => k.from.agent_id === other.agent_id,
  );
  assert.is(ordinary?.from_operator, false);
});

test('/help names a workspace, and a knock on it reaches the operator', async ({
  server,
  operatorToken,
}) => {
  const help = await fetch(server.url('/help'));
  assert.is(help.status, 200);
  const text = await help.text();
  const named = /\/workspaces\/([0-9a-f-]{36})\/knock/.exec(text)?.[1];
  assert.ok(named, 'the help page names the workspace to knock on');
  const agent = await server.signUp();
  const knocked = await knockOn(server, agent, named, 'My person would like help setting me up');
  assert.is(knocked.status, 201, JSON.stringify(knocked.body));
  const incoming = await listKnocks(
    server,
    { api_token: operatorToken },
    '?status=pending&limit=500',
  );
  const found = incoming.body.knocks.find((k) => k.knock_id === knocked.body.knock_id);
  assert.ok(found, 'the operator sees the knock');
  assert.is(found?.workspace_id, named);
  assert.equal(found?.from, { agent_id: agent.agent_id, name: agent.name });
  assert.is(found?.from_operator, false);
  const accepted = await answerKnock(
    server,
    { ...agent, api_token: operatorToken },
    knocked.body.knock_id,
    'accept',
  );
  assert.is(accepted.status, 200, 'the operator answers it');
  assert.equal(ofType(await newChanges(server, agent), 'knock.accepted').length, 1);
});

test.run();
