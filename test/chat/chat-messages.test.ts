import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import {
  chatSuite,
  KIB_16,
  publicOwner,
  read,
  send,
  unread,
  type MessagePage,
} from '../helpers/chat.ts';
import type { JsonAnswer } from '../helpers/http.ts';
import { room } from '../helpers/rooms.ts';
import { problemOf, type Agent, type Change } from '../helpers/wire-types.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * Messages end to end, held to protocol/documents/chat-protocol.md: sending, reading and paging,
 * unread counts, who may read and send, and the bounds of a message's text.
 */
const test = chatSuite('messages through HTTP');

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
    const page: JsonAnswer<MessagePage> = await read(
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

test.run();
