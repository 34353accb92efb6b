import * as assert from 'uvu/assert';
import { heard } from '../helpers/changes.ts';
import { callJson as call } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';
import type { Agent, Change } from '../helpers/wire-types.ts';
import { joinWorkspace, newWorkspace } from '../helpers/workspaces.ts';

/**
 * Two servers on one PostgreSQL carry one conversation: a knock accepted on both at once makes
 * one workspace, and messages sent to one workspace through both at once are numbered in one
 * order that every member's feed follows.
 */
const test = twoServerSuite('two servers carry one conversation at once');

test('a knock accepted on both servers at once makes one workspace, and the other accept answers 409', async ({
  a,
  b,
}) => {
  const owner = await a.signUp();
  const listing = await newWorkspace(a, owner, 'public');
  // Several knocks, each raced once: one race alone might not overlap at all.
  for (let round = 0; round < 5; round++) {
    const knocker = await b.signUp();
    const knocked = await call<{ knock_id: string }>(
      b,
      'POST',
      `/workspaces/${listing}/knock`,
      knocker.api_token,
      { note: `round ${round}` },
    );
    assert.is(knocked.status, 201, JSON.stringify(knocked.body));
    // Both servers hold the owner (its agent actor) before the race.
    await call(a, 'GET', '/knocks', owner.api_token);
    await call(b, 'GET', '/knocks', owner.api_token);
    const accept = (server: TestServer) =>
      call<{ workspace_id?: string; code?: string }>(
        server,
        'POST',
        `/knocks/${knocked.body.knock_id}/accept`,
        owner.api_token,
        {},
      );
    const answers = await Promise.all([accept(a), accept(b)]);
    assert.equal(
      answers.map((answer) => answer.status).sort(),
      [200, 409],
      JSON.stringify(answers),
    );
    const won = answers.find((answer) => answer.status === 200);
    const lost = answers.find((answer) => answer.status === 409);
    assert.is(lost?.body.code, 'knock_not_pending');
    for (const server of [a, b]) {
      const listed = await call<{ workspaces: { workspace_id: string }[] }>(
        server,
        'GET',
        '/workspaces',
        knocker.api_token,
      );
      assert.equal(
        listed.body.workspaces.map((w) => w.workspace_id),
        [won?.body.workspace_id],
        'the knocker is in exactly one new workspace',
      );
    }
    const accepted = await heard(a, knocker, 'knock.accepted');
    assert.equal(
      accepted.map((change) => change.data.workspace_id),
      [won?.body.workspace_id],
    );
  }
  const owned = await call<{ workspaces: unknown[] }>(b, 'GET', '/workspaces', owner.api_token);
  assert.is(owned.body.workspaces.length, 1 + 5, 'the listing and one workspace per knock');
});

test('messages sent to one workspace on both servers at once all get distinct order, and every member hears them all in that order', async ({
  a,
  b,
}) => {
  const owner = await a.signUp();
  const one = await a.signUp();
  const two = await b.signUp();
  const workspaceId = await newWorkspace(a, owner);
  await joinWorkspace(a, owner, one, workspaceId);
  await joinWorkspace(b, owner, two, workspaceId);
  for (const agent of [owner, one, two]) await heard(a, agent, 'none');
  // Both servers hold the workspace before the race.
  await call(a, 'GET', `/workspaces/${workspaceId}`, owner.api_token);
  await call(b, 'GET', `/workspaces/${workspaceId}`, owner.api_token);

  const send = (server: TestServer, agent: Agent, text: string) =>
    call<{ message_id: string }>(
      server,
      'POST',
      `/workspaces/${workspaceId}/messages`,
      agent.api_token,
      {
        text,
      },
    );
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      i % 2 ? send(a, one, `from one ${i}`) : send(b, two, `from two ${i}`),
    ),
  );
  assert.equal(
    answers.map((answer) => answer.status),
    Array<number>(20).fill(201),
    JSON.stringify(answers.filter((answer) => answer.status !== 201)),
  );
  const sent = answers.map((answer) => answer.body.message_id);

  const orderOn = async (server: TestServer) => {
    const page = await call<{ messages: { message_id: string; sender: { agent_id: string } }[] }>(
      server,
      'GET',
      `/workspaces/${workspaceId}/messages?limit=500`,
      owner.api_token,
    );
    assert.is(page.status, 200);
    return page.body.messages;
  };
  const messages = await orderOn(a);
  const order = messages.map((m) => m.message_id);
  assert.is(new Set(order).size, 20, 'each message once');
  assert.equal([...order].sort(), [...sent].sort());
  assert.equal(
    (await orderOn(b)).map((m) => m.message_id),
    order,
    'both servers read one order',
  );

  const fromOthers = (agent: Agent) =>
    messages.filter((m) => m.sender.agent_id !== agent.agent_id).map((m) => m.message_id);
  for (const [server, agent] of [
    [b, owner],
    [a, one],
    [b, two],
  ] as const) {
    const feed = (await heard(server, agent, 'message.sent')).map((c) => c.data.message_id);
    assert.equal(feed, fromOthers(agent), `${agent.name} hears every other member's, in order`);
  }
});

test('a member waiting on one server hears a message sent through the other', async ({ a, b }) => {
  const owner = await a.signUp();
  const guest = await b.signUp();
  const workspaceId = await newWorkspace(a, owner);
  await joinWorkspace(a, owner, guest, workspaceId);
  await heard(b, guest, 'none');
  const waiting = call<{ changes: Change[] }>(
    b,
    'GET',
    '/changes/wait?timeout=30',
    guest.api_token,
  );
  for (let i = 0; i < 10_000 && b.services.hub.listenerCount(guest.agent_id) === 0; i++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.is(b.services.hub.listenerCount(guest.agent_id), 1, 'the long-poll is parked');
  const sent = await call<{ message_id: string }>(
    a,
    'POST',
    `/workspaces/${workspaceId}/messages`,
    owner.api_token,
    { text: 'across processes' },
  );
  assert.is(sent.status, 201);
  const woken = await waiting;
  assert.equal(
    woken.body.changes.map((c) => [c.type, c.data.message_id, c.data.text]),
    [['message.sent', sent.body.message_id, 'across processes']],
  );
});

test.run();
