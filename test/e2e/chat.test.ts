import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { io as connect, type Socket } from 'socket.io-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { KNOCK_DAYS } from '../../machines/knock.ts';
import { TestClock } from '../helpers/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, joinWorkspace } from '../helpers/workspaces.ts';
import { callJson as call } from '../helpers/http.ts';
import { connectMcp, changesUntil as changesUntilOf } from '../helpers/clients.ts';

/**
 * Messages and knocks end to end, held to protocol/documents/chat-protocol.md: through HTTP,
 * socket.io and MCP, on a clock the test moves (knocks expire after 14 days).
 */

type Context = {
  server: TestServer;
  clock: TestClock;
  operatorToken: string;
  sockets: Socket[];
  clients: Client[];
};
const test = suite<Context>('messages and knocks through HTTP, socket.io and MCP');

test.before(async (context) => {
  context.clock = new TestClock();
  context.operatorToken = newToken();
  context.server = await startTestServer({
    clock: context.clock,
    operatorToken: context.operatorToken,
  });
  context.sockets = [];
  context.clients = [];
});
test.after.each(async ({ sockets, clients }) => {
  for (const socket of sockets.splice(0)) socket.disconnect();
  for (const client of clients.splice(0)) await client.close();
});
test.after(async ({ server }) => {
  await server.close();
});

const HOUR_MS = 3_600_000;
const KNOCK_LIFE_MS = KNOCK_DAYS * 24 * HOUR_MS;
const KIB_16 = 16 * 1024;

type Agent = { agent_id: string; name: string; api_token: string };
interface AgentRef {
  agent_id: string;
  name: string;
}
interface Message {
  message_id: string;
  workspace_id: string;
  sender: AgentRef;
  text: string;
  sent_at: string;
}
interface MessagePage {
  messages: Message[];
  next_after: string | null;
}
interface Knock {
  knock_id: string;
  from: AgentRef;
  to: AgentRef;
  workspace_id: string | null;
  note: string;
  status: string;
  created_at: string;
  expires_at: string;
  shared_workspace_id: string | null;
  from_operator: boolean;
}
interface KnockPage {
  knocks: Knock[];
  next_cursor: string | null;
}
interface Change {
  event_id: string;
  cursor: string;
  type: string;
  workspace_id?: string;
  actor?: AgentRef;
  data: Record<string, unknown>;
}
/** A refusal, as problem+json; members beyond the standard ones are the error's own. */
interface Problem {
  code: string;
  detail: string;
  status: unknown;
  knock_status?: string;
  field?: string;
  retry_after_seconds?: number;
}

interface Answer<T> {
  status: number;
  body: T;
  headers: Headers;
}

const problemOf = (answer: Answer<unknown>) => answer.body as Problem;

const send = (server: TestServer, agent: Agent, workspaceId: string, text: string) =>
  call<Message>(server, 'POST', `/workspaces/${workspaceId}/messages`, agent.api_token, { text });

const read = (server: TestServer, agent: Agent, workspaceId: string, query = '') =>
  call<MessagePage>(server, 'GET', `/workspaces/${workspaceId}/messages${query}`, agent.api_token);

const knockOn = (server: TestServer, agent: Agent, workspaceId: string, note: string) =>
  call<{ knock_id: string; status: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/knock`,
    agent.api_token,
    { note },
  );

const knockAgent = (server: TestServer, agent: Agent, target: AgentRef, note: string) =>
  call<{ knock_id: string; status: string }>(
    server,
    'POST',
    `/agents/${target.agent_id}/knock`,
    agent.api_token,
    { note },
  );

const answerKnock = (
  server: TestServer,
  agent: Agent,
  knockId: string,
  verb: 'accept' | 'decline' | 'withdraw',
) =>
  call<{ knock_id: string; status: string; workspace_id?: string }>(
    server,
    'POST',
    `/knocks/${knockId}/${verb}`,
    agent.api_token,
    {},
  );

const listKnocks = (server: TestServer, agent: { api_token: string }, query = '') =>
  call<KnockPage>(server, 'GET', `/knocks${query}`, agent.api_token);

/** The changes the agent has not read yet (reading moves its remembered place). */
async function newChanges(server: TestServer, agent: { api_token: string }): Promise<Change[]> {
  const page = await call<{ changes: Change[] }>(
    server,
    'GET',
    '/changes?limit=500',
    agent.api_token,
  );
  assert.is(page.status, 200);
  return page.body.changes;
}

const ofType = (changes: Change[], type: string) => changes.filter((c) => c.type === type);

async function unread(server: TestServer, agent: Agent) {
  const me = await call<{ unread: { changes: number; messages: number; knocks: number } }>(
    server,
    'GET',
    '/whoami',
    agent.api_token,
  );
  assert.is(me.status, 200);
  return me.body.unread;
}

/** A private workspace of `size` agents (the first owns it), each having read its feed. */
async function room(server: TestServer, size: number) {
  const agents: Agent[] = [];
  for (let i = 0; i < size; i++) agents.push(await server.signUp());
  const [owner] = agents as [Agent];
  const workspaceId = await newWorkspace(server, owner);
  for (const guest of agents.slice(1)) await joinWorkspace(server, owner, guest, workspaceId);
  for (const agent of agents) await newChanges(server, agent);
  return { workspaceId, agents };
}

/** An agent that owns a public workspace, and the workspace. */
async function publicOwner(server: TestServer) {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner, 'public');
  await newChanges(server, owner);
  return { owner, workspaceId };
}

async function memberIds(server: TestServer, agent: Agent, workspaceId: string) {
  const shown = await call<{ visibility: string; owner: AgentRef; members: AgentRef[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}`,
    agent.api_token,
  );
  assert.is(shown.status, 200);
  return shown.body.members.map((m) => m.agent_id).sort();
}

/** `409 knock_not_pending` carrying what became of the knock as `knock_status` (chat-protocol.md). */
function assertNotPending(answer: Answer<unknown>, status: string) {
  const problem = problemOf(answer);
  assert.is(answer.status, 409, JSON.stringify(problem));
  assert.is(problem.code, 'knock_not_pending');
  assert.ok(problem.detail.includes(status), `the detail names ${status}: ${problem.detail}`);
  assert.is(problem.knock_status, status, 'the problem carries the knock status as `knock_status`');
}

/** Moves the test clock and waits for the scheduled jobs that fell due on the way. */
async function moveClock(server: TestServer, clock: TestClock, ms: number): Promise<void> {
  // A job still running would arm its next timer after this move, and miss it.
  await server.scheduler.idle();
  clock.advance(ms);
  await server.scheduler.idle();
}

/** Lets the event loop turn until `check` holds; bounded, and no timer is involved. */
async function turnsUntil(check: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(check(), 'the awaited state was reached');
}

function openSocket(context: Context, token: string, cursor?: string): Socket {
  const socket = connect(context.server.baseUrl, {
    auth: cursor === undefined ? { token } : { token, cursor },
    transports: ['websocket'],
    reconnection: false,
  });
  context.sockets.push(socket);
  return socket;
}

/** The change events the socket receives until the first of type `last`, included. */
const changesUntil = (socket: Socket, last: string) => changesUntilOf<Change>(socket, last);

/**
 * Resolves once the socket carries live changes: the agent's own feedback, sent now, is the
 * last thing it has to hear before anything the test does next.
 */
async function caughtUp(server: TestServer, socket: Socket, agent: Agent): Promise<void> {
  const heard = changesUntil(socket, 'feedback.received');
  const sent = await server.post(
    '/feedback',
    { message: 'ready', category: 'other' },
    agent.api_token,
  );
  assert.is(sent.status, 202);
  await heard;
}

async function mcpClient(context: Context, token: string): Promise<Client> {
  const client = await connectMcp(context.server, token, 'chat-test-agent');
  context.clients.push(client);
  return client;
}

type ToolResult = {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
};
const tool = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;

// ---------------------------------------------------------------------------------------------
// Messages

test('a member sends a message: every other member gets message.sent with its text and actor, the sender does not', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 3);
  const [owner, sender, other] = agents as [Agent, Agent, Agent];
  const sent = await send(server, sender, workspaceId, 'Draft is in drafts/logo.svg');
  assert.is(sent.status, 201, JSON.stringify(sent.body));
  assert.equal(sent.body, {
    message_id: sent.body.message_id,
    workspace_id: workspaceId,
    sender: { agent_id: sender.agent_id, name: sender.name },
    text: 'Draft is in drafts/logo.svg',
    sent_at: new Date(server.services.clock.now()).toISOString(),
  });
  for (const member of [owner, other]) {
    const heard = ofType(await newChanges(server, member), 'message.sent');
    assert.is(heard.length, 1, 'one message.sent for each other member');
    const [change] = heard as [Change];
    assert.is(change.workspace_id, workspaceId);
    assert.equal(change.actor, { agent_id: sender.agent_id, name: sender.name });
    assert.equal(change.data, {
      message_id: sent.body.message_id,
      text: 'Draft is in drafts/logo.svg',
      sent_at: sent.body.sent_at,
    });
  }
  assert.equal(ofType(await newChanges(server, sender), 'message.sent'), [], 'not the sender');
});

test('read_messages pages with after and limit, oldest first, and next_after is null at the end', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 2);
  const [owner, guest] = agents as [Agent, Agent];
  const ids: string[] = [];
  for (let i = 1; i <= 5; i++) {
    const sent = await send(server, i % 2 ? owner : guest, workspaceId, `message ${i}`);
    assert.is(sent.status, 201);
    ids.push(sent.body.message_id);
  }
  const all = await read(server, guest, workspaceId);
  assert.is(all.status, 200);
  assert.equal(
    all.body.messages.map((m) => [m.text, m.sender.agent_id]),
    [
      ['message 1', owner.agent_id],
      ['message 2', guest.agent_id],
      ['message 3', owner.agent_id],
      ['message 4', guest.agent_id],
      ['message 5', owner.agent_id],
    ],
  );
  assert.is(all.body.next_after, null);

  const first = await read(server, guest, workspaceId, '?limit=2');
  assert.equal(
    first.body.messages.map((m) => m.message_id),
    ids.slice(0, 2),
  );
  assert.is(first.body.next_after, ids[1]);
  const second = await read(server, guest, workspaceId, `?after=${first.body.next_after}&limit=2`);
  assert.equal(
    second.body.messages.map((m) => m.message_id),
    ids.slice(2, 4),
  );
  assert.is(second.body.next_after, ids[3]);
  const last = await read(server, guest, workspaceId, `?after=${second.body.next_after}&limit=2`);
  assert.equal(
    last.body.messages.map((m) => m.message_id),
    ids.slice(4),
  );
  assert.is(last.body.next_after, null);
  const beyond = await read(server, guest, workspaceId, `?after=${ids[4]}`);
  assert.equal(beyond.body, { messages: [], next_after: null });
});

test('whoami counts unread messages from others only, and the count drops to 0 as they are read', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 2);
  const [owner, guest] = agents as [Agent, Agent];
  for (const text of ['one', 'two', 'three']) await send(server, owner, workspaceId, text);
  assert.is((await unread(server, guest)).messages, 3, "the owner's three");
  assert.is((await unread(server, owner)).messages, 0, 'its own messages are read already');

  const page = await read(server, guest, workspaceId, '?limit=2');
  assert.is(page.body.messages.length, 2);
  assert.is((await unread(server, guest)).messages, 1, 'two read, one left');
  await read(server, guest, workspaceId, `?after=${page.body.next_after}`);
  assert.is((await unread(server, guest)).messages, 0);

  // Reading again from the start never moves the mark back.
  await read(server, guest, workspaceId, '?limit=1');
  assert.is((await unread(server, guest)).messages, 0);
});

test('only read_messages moves the read mark: sending a message leaves the unread messages of others unread', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 2);
  const [owner, guest] = agents as [Agent, Agent];
  for (const text of ['one', 'two', 'three']) await send(server, owner, workspaceId, text);
  await send(server, guest, workspaceId, 'a reply before reading');
  assert.is((await unread(server, owner)).messages, 1, "the guest's reply");
  assert.is(
    (await unread(server, guest)).messages,
    3,
    "the owner's three are still unread: the guest has not read them",
  );
});

test('in a public workspace a non-member may read the messages but is refused 403 on send', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const reader = await server.signUp();
  const sent = await send(server, owner, workspaceId, 'Listing questions welcome');
  assert.is(sent.status, 201);
  const page = await read(server, reader, workspaceId);
  assert.is(page.status, 200);
  assert.equal(
    page.body.messages.map((m) => m.message_id),
    [sent.body.message_id],
  );
  const refused = await send(server, reader, workspaceId, 'let me in');
  assert.is(refused.status, 403);
  assert.is(problemOf(refused).code, 'forbidden');
  assert.is((await read(server, owner, workspaceId)).body.messages.length, 1, 'nothing recorded');
});

test('a stranger to a private workspace gets the same 404 on read and send as for no workspace at all', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 1);
  const [owner] = agents as [Agent];
  await send(server, owner, workspaceId, 'private');
  const stranger = await server.signUp();
  const missing = randomUUID();
  const readHidden = await read(server, stranger, workspaceId);
  const readMissing = await read(server, stranger, missing);
  assert.is(readHidden.status, 404);
  assert.equal(readHidden.body, readMissing.body);
  const sendHidden = await send(server, stranger, workspaceId, 'hello?');
  const sendMissing = await send(server, stranger, missing, 'hello?');
  assert.is(sendHidden.status, 404);
  assert.equal(sendHidden.body, sendMissing.body);
  assert.is(problemOf(sendHidden).code, 'not_found');
});

test('message text is 1 byte to 16 KiB of UTF-8: empty is 400, one byte over is 413 payload_too_large, counted in bytes not characters', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 1);
  const [owner] = agents as [Agent];
  const empty = await send(server, owner, workspaceId, '');
  assert.is(empty.status, 400);
  assert.is(problemOf(empty).code, 'invalid_input');

  const accepted = [
    'a'.repeat(KIB_16),
    'é'.repeat(KIB_16 / 2), // 2 bytes each
    '€'.repeat(5461) + 'a', // 3 bytes each: 16,383 + 1
    '😀'.repeat(KIB_16 / 4), // 4 bytes each (two UTF-16 units)
    'a',
  ];
  for (const text of accepted) {
    assert.is(Buffer.byteLength(text), text === 'a' ? 1 : KIB_16);
    const sent = await send(server, owner, workspaceId, text);
    assert.is(sent.status, 201, `${text.length} characters, ${Buffer.byteLength(text)} bytes`);
    assert.is(sent.body.text, text);
  }
  const refused = [
    'a'.repeat(KIB_16 + 1),
    'é'.repeat(KIB_16 / 2) + 'a',
    '€'.repeat(5462), // 16,386 bytes in 5,462 characters
    '😀'.repeat(KIB_16 / 4 - 1) + 'aaaaa',
  ];
  for (const text of refused) {
    assert.ok(Buffer.byteLength(text) > KIB_16);
    const sent = await send(server, owner, workspaceId, text);
    assert.is(sent.status, 413, `${text.length} characters, ${Buffer.byteLength(text)} bytes`);
    assert.is(problemOf(sent).code, 'payload_too_large');
  }
  const stored = await read(server, owner, workspaceId);
  assert.equal(
    stored.body.messages.map((m) => m.text),
    accepted,
    'the accepted ones, whole, and none of the refused',
  );
});

test('read_messages refuses an `after` that is not a message of the workspace with 400', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 1);
  const [owner] = agents as [Agent];
  const other = await newWorkspace(server, owner);
  const elsewhere = await send(server, owner, other, 'in the other workspace');
  await send(server, owner, workspaceId, 'here');
  for (const after of [randomUUID(), elsewhere.body.message_id]) {
    const answer = await read(server, owner, workspaceId, `?after=${after}`);
    assert.is(answer.status, 400, after);
    assert.is(problemOf(answer).code, 'invalid_input');
    assert.is(problemOf(answer).field, 'after');
  }
  const malformed = await read(server, owner, workspaceId, '?after=not-a-uuid');
  assert.is(malformed.status, 400);
});

test('20 messages sent at once by two members get distinct, increasing order, and read_messages returns each once', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 3);
  const [owner, one, two] = agents as [Agent, Agent, Agent];
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) => send(server, i % 2 ? one : two, workspaceId, `m${i}`)),
  );
  assert.equal(
    answers.map((a) => a.status),
    Array<number>(20).fill(201),
  );
  const sentIds = answers.map((a) => a.body.message_id);
  const all = await read(server, owner, workspaceId, '?limit=500');
  const readIds = all.body.messages.map((m) => m.message_id);
  assert.is(readIds.length, 20);
  assert.equal([...readIds].sort(), [...sentIds].sort(), 'each message once');

  // Paging in small steps walks the same order and repeats nothing.
  const paged: string[] = [];
  let after: string | null = null;
  do {
    const page: Answer<MessagePage> = await read(
      server,
      owner,
      workspaceId,
      `?limit=3${after ? `&after=${after}` : ''}`,
    );
    paged.push(...page.body.messages.map((m) => m.message_id));
    after = page.body.next_after;
  } while (after);
  assert.equal(paged, readIds);

  // The order is the one the owner heard them in: one order for everyone.
  const heard = ofType(await newChanges(server, owner), 'message.sent');
  assert.equal(
    heard.map((c) => c.data.message_id),
    readIds,
  );
  const sentAt = all.body.messages.map((m) => Date.parse(m.sent_at));
  assert.equal(
    sentAt,
    [...sentAt].sort((a, b) => a - b),
  );
});

// ---------------------------------------------------------------------------------------------
// Knocks

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
  const won = answers.find((a) => a.status === 200) as Answer<{ workspace_id?: string }>;
  const lost = answers.find((a) => a.status === 409) as Answer<unknown>;
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

// ---------------------------------------------------------------------------------------------
// Real time

test('a member connected over socket.io gets message.sent the moment it is sent', async (context) => {
  const { server } = context;
  const { workspaceId, agents } = await room(server, 2);
  const [owner, guest] = agents as [Agent, Agent];
  const socket = openSocket(context, guest.api_token);
  await caughtUp(server, socket, guest);
  const live = changesUntil(socket, 'message.sent');
  const sent = await send(server, owner, workspaceId, 'live');
  const pushed = await live;
  assert.equal(
    pushed.map((c) => [c.type, c.data.message_id, c.data.text]),
    [['message.sent', sent.body.message_id, 'live']],
  );
  assert.equal(pushed[0]?.actor, { agent_id: owner.agent_id, name: owner.name });
});

test('a member that reconnects with its cursor gets exactly the messages it missed, once each', async (context) => {
  const { server } = context;
  const { workspaceId, agents } = await room(server, 2);
  const [owner, guest] = agents as [Agent, Agent];
  const first = openSocket(context, guest.api_token);
  await caughtUp(server, first, guest);
  const live = changesUntil(first, 'message.sent');
  await send(server, owner, workspaceId, 'seen');
  const [seen] = await live;
  first.disconnect();
  await turnsUntil(() => server.services.hub.listenerCount(guest.agent_id) === 0);

  const missed: string[] = [];
  for (const text of ['missed 1', 'missed 2', 'missed 3']) {
    missed.push((await send(server, owner, workspaceId, text)).body.message_id);
  }
  // The guest's own feedback marks the end of what the new socket is to see.
  await server.post('/feedback', { message: 'back', category: 'other' }, guest.api_token);

  const second = openSocket(context, guest.api_token, seen?.cursor);
  const replayed = await changesUntil(second, 'feedback.received');
  assert.equal(
    replayed.map((c) => [c.type, c.data.message_id ?? null]),
    [...missed.map((id) => ['message.sent', id]), ['feedback.received', null]],
  );
});

// ---------------------------------------------------------------------------------------------
// MCP

test('send_message, read_messages, knock and accept_knock work over MCP and answer as HTTP does', async (context) => {
  const { server } = context;
  const { workspaceId, agents } = await room(server, 2);
  const [owner, guest] = agents as [Agent, Agent];
  const ownerClient = await mcpClient(context, owner.api_token);

  const sent = await tool(ownerClient, 'send_message', {
    workspace_id: workspaceId,
    text: 'via MCP',
  });
  assert.not.ok(sent.isError, JSON.stringify(sent));
  const viaHttp = await read(server, guest, workspaceId);
  assert.equal(viaHttp.body.messages, [sent.structuredContent]);
  const heard = ofType(await newChanges(server, guest), 'message.sent');
  assert.equal(
    heard.map((c) => c.data.text),
    ['via MCP'],
  );

  const readOver = await tool(ownerClient, 'read_messages', { workspace_id: workspaceId });
  assert.not.ok(readOver.isError, JSON.stringify(readOver));
  assert.equal(readOver.structuredContent, viaHttp.body);
  const tooBig = await tool(ownerClient, 'send_message', {
    workspace_id: workspaceId,
    text: 'é'.repeat(KIB_16 / 2) + 'a',
  });
  assert.ok(tooBig.isError);
  assert.is((JSON.parse(tooBig.content[0]?.text ?? '{}') as Problem).code, 'payload_too_large');

  const { owner: seller, workspaceId: listing } = await publicOwner(server);
  const knockerClient = await mcpClient(context, guest.api_token);
  const knocked = await tool(knockerClient, 'knock', { workspace_id: listing, note: 'via MCP' });
  assert.not.ok(knocked.isError, JSON.stringify(knocked));
  const knockId = (knocked.structuredContent as { knock_id: string }).knock_id;
  assert.equal(knocked.structuredContent, { knock_id: knockId, status: 'pending' });
  const incoming = await listKnocks(server, seller);
  assert.equal(
    incoming.body.knocks.map((k) => [k.knock_id, k.note, k.from.agent_id]),
    [[knockId, 'via MCP', guest.agent_id]],
  );

  const sellerClient = await mcpClient(context, seller.api_token);
  const accepted = await tool(sellerClient, 'accept_knock', { knock_id: knockId });
  assert.not.ok(accepted.isError, JSON.stringify(accepted));
  const shared = (accepted.structuredContent as { workspace_id: string }).workspace_id;
  assert.equal(accepted.structuredContent, {
    knock_id: knockId,
    status: 'accepted',
    workspace_id: shared,
  });
  assert.equal(await memberIds(server, guest, shared), [guest.agent_id, seller.agent_id].sort());

  const twice = await tool(sellerClient, 'accept_knock', { knock_id: knockId });
  assert.ok(twice.isError);
  const overHttp = await answerKnock(server, seller, knockId, 'accept');
  const problem = JSON.parse(twice.content[0]?.text ?? '{}') as Problem;
  assert.is(problem.code, 'knock_not_pending');
  assert.equal(problem, overHttp.body, 'the same problem through both doors');
});

test.run();
