import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import {
  answerKnock,
  assertNotPending,
  chatSuite,
  knockOn,
  KNOCK_LIFE_MS,
  listKnocks,
  moveClock,
  publicOwner,
  read,
  send,
  unread,
} from '../helpers/chat.ts';
import { callJson as call } from '../helpers/http.ts';
import { problemOf, type Agent, type AgentRef, type Change } from '../helpers/wire-types.ts';

/**
 * Knocks end to end, held to protocol/documents/chat-protocol.md: a knock reaches its target,
 * is listed, and is accepted (a workspace holding both), declined or withdrawn.
 */
const test = chatSuite('knocks through HTTP');

test('a knock on a public workspace reaches its owner with the note, the knocker and from_operator false, and counts as unread', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const note = 'I can do this by Friday for 20 USDC';
  const knocked = await knockOn(server, knocker, workspaceId, note);
  assert.is(knocked.status, 201, JSON.stringify(knocked.body));
  assert.equal(knocked.body, { knock_id: knocked.body.knock_id, status: 'pending' });

  const received = ofType(await newChanges(server, owner), 'knock.received');
  assert.is(received.length, 1);
  const [change] = received as [Change];
  assert.is(change.workspace_id, workspaceId);
  assert.equal(change.actor, { agent_id: knocker.agent_id, name: knocker.name });
  assert.equal(change.data, {
    knock_id: knocked.body.knock_id,
    from: { agent_id: knocker.agent_id, name: knocker.name },
    workspace_id: workspaceId,
    note,
    from_operator: false,
    expires_at: new Date(server.services.clock.now() + KNOCK_LIFE_MS).toISOString(),
  });
  assert.is((await unread(server, owner)).knocks, 1);
  assert.is((await unread(server, knocker)).knocks, 0, 'a knock sent is not one received');
});

test('list_knocks shows incoming and outgoing knocks newest first, pages, and filters by status', async ({
  server,
  clock,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knockers = [await server.signUp(), await server.signUp(), await server.signUp()];
  const ids: string[] = [];
  for (const [i, knocker] of knockers.entries()) {
    const knocked = await knockOn(server, knocker, workspaceId, `note ${i}`);
    assert.is(knocked.status, 201);
    ids.push(knocked.body.knock_id);
    await moveClock(server, clock, 1000);
  }
  const created = server.services.clock.now() - 3000;
  const declined = await answerKnock(server, owner, ids[0] as string, 'decline');
  assert.is(declined.status, 200);

  const incoming = await listKnocks(server, owner);
  assert.is(incoming.status, 200);
  assert.equal(
    incoming.body.knocks.map((k) => [k.knock_id, k.status]),
    [
      [ids[2], 'pending'],
      [ids[1], 'pending'],
      [ids[0], 'declined'],
    ],
  );
  assert.is(incoming.body.next_cursor, null);
  assert.equal(incoming.body.knocks[2], {
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
    (await listKnocks(server, owner, '?direction=incoming')).body,
    incoming.body,
    'incoming is the default',
  );

  const pending = await listKnocks(server, owner, '?status=pending');
  assert.equal(
    pending.body.knocks.map((k) => k.knock_id),
    [ids[2], ids[1]],
  );
  const onlyDeclined = await listKnocks(server, owner, '?status=declined');
  assert.equal(
    onlyDeclined.body.knocks.map((k) => k.knock_id),
    [ids[0]],
  );
  assert.equal((await listKnocks(server, owner, '?status=accepted')).body.knocks, []);

  const firstPage = await listKnocks(server, owner, '?limit=2');
  assert.equal(
    firstPage.body.knocks.map((k) => k.knock_id),
    [ids[2], ids[1]],
  );
  assert.ok(firstPage.body.next_cursor);
  const secondPage = await listKnocks(
    server,
    owner,
    `?limit=2&cursor=${firstPage.body.next_cursor}`,
  );
  assert.equal(
    secondPage.body.knocks.map((k) => k.knock_id),
    [ids[0]],
  );
  assert.is(secondPage.body.next_cursor, null);

  const outgoing = await listKnocks(server, knockers[0] as Agent, '?direction=outgoing');
  assert.equal(
    outgoing.body.knocks.map((k) => [k.knock_id, k.status]),
    [[ids[0], 'declined']],
  );
  assert.equal((await listKnocks(server, knockers[0] as Agent)).body.knocks, [], 'none incoming');
  assert.equal((await listKnocks(server, owner, '?direction=outgoing')).body.knocks, []);
  const bad = await listKnocks(server, owner, '?status=maybe');
  assert.is(bad.status, 400);
});

test('accepting a knock makes a private workspace holding both, tells the knocker its id, and both may message there', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  await newChanges(server, knocker);
  const knocked = await knockOn(server, knocker, workspaceId, 'Can we talk about the logo?');
  const accepted = await answerKnock(server, owner, knocked.body.knock_id, 'accept');
  assert.is(accepted.status, 200, JSON.stringify(accepted.body));
  const shared = accepted.body.workspace_id as string;
  assert.equal(accepted.body, {
    knock_id: knocked.body.knock_id,
    status: 'accepted',
    workspace_id: shared,
  });
  assert.is.not(shared, workspaceId);

  const shown = await call<{
    visibility: string;
    owner: AgentRef;
    members: (AgentRef & { role: string })[];
  }>(server, 'GET', `/workspaces/${shared}`, knocker.api_token);
  assert.is(shown.status, 200);
  assert.is(shown.body.visibility, 'private');
  assert.is(shown.body.owner.agent_id, owner.agent_id, 'the accepting agent owns it');
  assert.equal(
    shown.body.members.map((m) => [m.agent_id, m.role]).sort(),
    [
      [knocker.agent_id, 'member'],
      [owner.agent_id, 'owner'],
    ].sort(),
  );

  const told = ofType(await newChanges(server, knocker), 'knock.accepted');
  assert.is(told.length, 1);
  assert.is(told[0]?.workspace_id, shared);
  assert.is(told[0]?.data.workspace_id, shared);
  assert.is(told[0]?.data.knock_id, knocked.body.knock_id);
  assert.equal(told[0]?.actor, { agent_id: owner.agent_id, name: owner.name });

  const outgoing = await listKnocks(server, knocker, '?direction=outgoing');
  assert.equal(
    outgoing.body.knocks.map((k) => [k.status, k.shared_workspace_id]),
    [['accepted', shared]],
  );
  assert.is((await unread(server, owner)).knocks, 0, 'an answered knock is no longer unread');

  await newChanges(server, owner);
  const fromKnocker = await send(server, knocker, shared, 'Hello! Here is my portfolio.');
  assert.is(fromKnocker.status, 201);
  const fromOwner = await send(server, owner, shared, 'Thanks, looks good.');
  assert.is(fromOwner.status, 201);
  assert.equal(
    ofType(await newChanges(server, owner), 'message.sent').map((c) => c.data.text),
    ['Hello! Here is my portfolio.'],
  );
  assert.equal(
    ofType(await newChanges(server, knocker), 'message.sent').map((c) => c.data.text),
    ['Thanks, looks good.'],
  );
  const stranger = await server.signUp();
  assert.is((await read(server, stranger, shared)).status, 404, 'private to the two of them');
});

test('declining a knock tells the knocker with knock.declined, and makes no workspace', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  await newChanges(server, knocker);
  const knocked = await knockOn(server, knocker, workspaceId, 'Interested?');
  const declined = await answerKnock(server, owner, knocked.body.knock_id, 'decline');
  assert.is(declined.status, 200);
  assert.equal(declined.body, { knock_id: knocked.body.knock_id, status: 'declined' });
  const told = ofType(await newChanges(server, knocker), 'knock.declined');
  assert.is(told.length, 1);
  assert.is(told[0]?.data.knock_id, knocked.body.knock_id);
  assert.equal(told[0]?.actor, { agent_id: owner.agent_id, name: owner.name });
  const workspaces = await call<{ workspaces: unknown[] }>(
    server,
    'GET',
    '/workspaces',
    knocker.api_token,
  );
  assert.equal(workspaces.body.workspaces, []);
  assert.is((await unread(server, owner)).knocks, 0);
});

test('only the knocker withdraws a knock; the target hears of it and can no longer accept it', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const third = await server.signUp();
  const knocked = await knockOn(server, knocker, workspaceId, 'Still available?');
  const id = knocked.body.knock_id;
  const byTarget = await answerKnock(server, owner, id, 'withdraw');
  assert.is(byTarget.status, 403);
  assert.is(problemOf(byTarget).code, 'forbidden');
  const byThird = await answerKnock(server, third, id, 'withdraw');
  assert.is(byThird.status, 404);
  assert.is(problemOf(byThird).code, 'not_found');

  const withdrawn = await answerKnock(server, knocker, id, 'withdraw');
  assert.is(withdrawn.status, 200);
  assert.equal(withdrawn.body, { knock_id: id, status: 'withdrawn' });
  const told = ofType(await newChanges(server, owner), 'knock.withdrawn');
  assert.equal(
    told.map((c) => c.data.knock_id),
    [id],
  );
  assert.is((await unread(server, owner)).knocks, 0);
  assert.equal(
    (await listKnocks(server, owner)).body.knocks.map((k) => [k.knock_id, k.status]),
    [[id, 'withdrawn']],
  );
  assertNotPending(await answerKnock(server, owner, id, 'accept'), 'withdrawn');
  assertNotPending(await answerKnock(server, knocker, id, 'withdraw'), 'withdrawn');
});

test.run();
