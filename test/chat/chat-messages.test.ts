import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { KIB_16 } from '../helpers/chat.ts';
import { ofType } from '../helpers/changes.ts';
import type { DirectAgent, DirectDoor, DirectInput } from '../helpers/direct.ts';
import { directChatSuite, publicOwner, room, unread } from '../helpers/direct-chat.ts';
import { newChanges } from '../helpers/direct-feed.ts';
import { outcome, problemOf, workspaceOf } from '../helpers/direct-workspaces.ts';
import type { Change } from '../helpers/wire-types.ts';

/**
 * Messages end to end, held to protocol/documents/chat-protocol.md: sending, reading and paging,
 * unread counts, who may read and send, and the bounds of a message's text. Through the direct
 * door: chat-live.test.ts takes them through socket.io and MCP.
 */
const test = directChatSuite('messages, without a transport');

const send = (door: DirectDoor, agent: DirectAgent, workspaceId: string, text: string) =>
  door.call('send_message', { workspace_id: workspaceId, text }, agent.api_token);

const read = (
  door: DirectDoor,
  agent: DirectAgent,
  workspaceId: string,
  query: Omit<DirectInput<'read_messages'>, 'workspace_id'> = {},
) => door.call('read_messages', { workspace_id: workspaceId, ...query }, agent.api_token);

test('a member sends a message: every other member gets message.sent with its text and actor, the sender does not', async ({
  server,
  door,
}) => {
  const { workspaceId, agents } = await room(door, 3);
  const [owner, sender, other] = agents as [DirectAgent, DirectAgent, DirectAgent];
  const sent = await send(door, sender, workspaceId, 'Draft is in drafts/logo.svg');
  assert.equal(sent, {
    message_id: sent.message_id,
    workspace_id: workspaceId,
    sender: { agent_id: sender.agent_id, name: sender.name },
    text: 'Draft is in drafts/logo.svg',
    sent_at: new Date(server.services.clock.now()).toISOString(),
  });
  for (const member of [owner, other]) {
    const heard = ofType(await newChanges(door, member), 'message.sent');
    assert.is(heard.length, 1, 'one message.sent for each other member');
    const [change] = heard as [Change];
    assert.is(change.workspace_id, workspaceId);
    assert.equal(change.actor, { agent_id: sender.agent_id, name: sender.name });
    assert.equal(change.data, {
      message_id: sent.message_id,
      text: 'Draft is in drafts/logo.svg',
      sent_at: sent.sent_at,
    });
  }
  assert.equal(ofType(await newChanges(door, sender), 'message.sent'), [], 'not the sender');
});

test('read_messages pages with after and limit, oldest first, and next_after is null at the end', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 2);
  const [owner, guest] = agents as [DirectAgent, DirectAgent];
  const ids: string[] = [];
  for (let i = 1; i <= 5; i++) {
    const sent = await send(door, i % 2 ? owner : guest, workspaceId, `message ${i}`);
    ids.push(sent.message_id);
  }
  const all = await read(door, guest, workspaceId);
  assert.equal(
    all.messages.map((m) => [m.text, m.sender.agent_id]),
    [
      ['message 1', owner.agent_id],
      ['message 2', guest.agent_id],
      ['message 3', owner.agent_id],
      ['message 4', guest.agent_id],
      ['message 5', owner.agent_id],
    ],
  );
  assert.is(all.next_after, null);

  const first = await read(door, guest, workspaceId, { limit: 2 });
  assert.equal(
    first.messages.map((m) => m.message_id),
    ids.slice(0, 2),
  );
  assert.is(first.next_after, ids[1]);
  const second = await read(door, guest, workspaceId, {
    after: first.next_after as string,
    limit: 2,
  });
  assert.equal(
    second.messages.map((m) => m.message_id),
    ids.slice(2, 4),
  );
  assert.is(second.next_after, ids[3]);
  const last = await read(door, guest, workspaceId, {
    after: second.next_after as string,
    limit: 2,
  });
  assert.equal(
    last.messages.map((m) => m.message_id),
    ids.slice(4),
  );
  assert.is(last.next_after, null);
  const beyond = await read(door, guest, workspaceId, { after: ids[4] as string });
  assert.equal(beyond, { messages: [], next_after: null });
});

test('whoami counts unread messages from others only, and the count drops to 0 as they are read', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 2);
  const [owner, guest] = agents as [DirectAgent, DirectAgent];
  for (const text of ['one', 'two', 'three']) await send(door, owner, workspaceId, text);
  assert.is((await unread(door, guest)).messages, 3, "the owner's three");
  assert.is((await unread(door, owner)).messages, 0, 'its own messages are read already');

  const page = await read(door, guest, workspaceId, { limit: 2 });
  assert.is(page.messages.length, 2);
  assert.is((await unread(door, guest)).messages, 1, 'two read, one left');
  await read(door, guest, workspaceId, { after: page.next_after as string });
  assert.is((await unread(door, guest)).messages, 0);

  // Reading again from the start never moves the mark back.
  await read(door, guest, workspaceId, { limit: 1 });
  assert.is((await unread(door, guest)).messages, 0);
});

test('only read_messages moves the read mark: sending a message leaves the unread messages of others unread', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 2);
  const [owner, guest] = agents as [DirectAgent, DirectAgent];
  for (const text of ['one', 'two', 'three']) await send(door, owner, workspaceId, text);
  await send(door, guest, workspaceId, 'a reply before reading');
  assert.is((await unread(door, owner)).messages, 1, "the guest's reply");
  assert.is(
    (await unread(door, guest)).messages,
    3,
    "the owner's three are still unread: the guest has not read them",
  );
});

test('in a public workspace a non-member may read the messages but is refused 403 on send', async ({
  door,
}) => {
  const { owner, workspaceId } = await publicOwner(door);
  const reader = await door.signUp();
  const sent = await send(door, owner, workspaceId, 'Listing questions welcome');
  const page = await read(door, reader, workspaceId);
  assert.equal(
    page.messages.map((m) => m.message_id),
    [sent.message_id],
  );
  const refused = await door.refusal(
    'send_message',
    { workspace_id: workspaceId, text: 'let me in' },
    reader.api_token,
  );
  assert.is(refused.code, 'forbidden');
  assert.is((await read(door, owner, workspaceId)).messages.length, 1, 'nothing recorded');
});

test('a stranger to a private workspace gets the same 404 on read and send as for no workspace at all', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 1);
  const [owner] = agents as [DirectAgent];
  await send(door, owner, workspaceId, 'private');
  const stranger = await door.signUp();
  const missing = randomUUID();
  const reading = (workspace_id: string) =>
    door.refusal('read_messages', { workspace_id }, stranger.api_token);
  const sending = (workspace_id: string) =>
    door.refusal('send_message', { workspace_id, text: 'hello?' }, stranger.api_token);
  const readHidden = await reading(workspaceId);
  const readMissing = await reading(missing);
  assert.is(readHidden.code, 'not_found');
  assert.equal(problemOf(readHidden), problemOf(readMissing));
  const sendHidden = await sending(workspaceId);
  const sendMissing = await sending(missing);
  assert.equal(problemOf(sendHidden), problemOf(sendMissing));
  assert.is(sendHidden.code, 'not_found');
});

test('message text is 1 byte to 16 KiB of UTF-8: empty is 400, one byte over is 413 payload_too_large, counted in bytes not characters', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 1);
  const [owner] = agents as [DirectAgent];
  const refusedText = (text: string) =>
    door.refusal('send_message', { workspace_id: workspaceId, text }, owner.api_token);
  const empty = await refusedText('');
  assert.is(empty.code, 'invalid_input');

  const accepted = [
    'a'.repeat(KIB_16),
    'é'.repeat(KIB_16 / 2), // 2 bytes each
    '€'.repeat(5461) + 'a', // 3 bytes each: 16,383 + 1
    '😀'.repeat(KIB_16 / 4), // 4 bytes each (two UTF-16 units)
    'a',
  ];
  for (const text of accepted) {
    assert.is(Buffer.byteLength(text), text === 'a' ? 1 : KIB_16);
    const sent = await send(door, owner, workspaceId, text);
    assert.is(sent.text, text, `${text.length} characters, ${Buffer.byteLength(text)} bytes`);
  }
  const refused = [
    'a'.repeat(KIB_16 + 1),
    'é'.repeat(KIB_16 / 2) + 'a',
    '€'.repeat(5462), // 16,386 bytes in 5,462 characters
    '😀'.repeat(KIB_16 / 4 - 1) + 'aaaaa',
  ];
  for (const text of refused) {
    assert.ok(Buffer.byteLength(text) > KIB_16);
    const sent = await refusedText(text);
    assert.is(
      sent.code,
      'payload_too_large',
      `${text.length} characters, ${Buffer.byteLength(text)} bytes`,
    );
  }
  const stored = await read(door, owner, workspaceId);
  assert.equal(
    stored.messages.map((m) => m.text),
    accepted,
    'the accepted ones, whole, and none of the refused',
  );
});

test('read_messages refuses an `after` that is not a message of the workspace with 400', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 1);
  const [owner] = agents as [DirectAgent];
  const other = await workspaceOf(door, owner);
  const elsewhere = await send(door, owner, other, 'in the other workspace');
  await send(door, owner, workspaceId, 'here');
  for (const after of [randomUUID(), elsewhere.message_id]) {
    const answer = await door.refusal(
      'read_messages',
      { workspace_id: workspaceId, after },
      owner.api_token,
    );
    assert.is(answer.code, 'invalid_input', after);
    assert.is(answer.extra.field, 'after');
  }
  const malformed = await door.refusal(
    'read_messages',
    { workspace_id: workspaceId, after: 'not-a-uuid' },
    owner.api_token,
  );
  assert.is(malformed.code, 'invalid_input');
});

test('20 messages sent at once by two members get distinct, increasing order, and read_messages returns each once', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 3);
  const [owner, one, two] = agents as [DirectAgent, DirectAgent, DirectAgent];
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      outcome(send(door, i % 2 ? one : two, workspaceId, `m${i}`)),
    ),
  );
  const sent = answers.flatMap((a) => ('answer' in a ? [a.answer] : []));
  assert.is(sent.length, 20, 'every one is taken');
  const sentIds = sent.map((a) => a.message_id);
  const all = await read(door, owner, workspaceId, { limit: 500 });
  const readIds = all.messages.map((m) => m.message_id);
  assert.is(readIds.length, 20);
  assert.equal([...readIds].sort(), [...sentIds].sort(), 'each message once');

  // Paging in small steps walks the same order and repeats nothing.
  const paged: string[] = [];
  let after: string | null = null;
  do {
    const page: Awaited<ReturnType<typeof read>> = await read(door, owner, workspaceId, {
      limit: 3,
      ...(after ? { after } : {}),
    });
    paged.push(...page.messages.map((m) => m.message_id));
    after = page.next_after;
  } while (after);
  assert.equal(paged, readIds);

  // The order is the one the owner heard them in: one order for everyone.
  const heard = ofType(await newChanges(door, owner), 'message.sent');
  assert.equal(
    heard.map((c) => c.data.message_id),
    readIds,
  );
  const sentAt = all.messages.map((m) => Date.parse(m.sent_at));
  assert.equal(
    sentAt,
    [...sentAt].sort((a, b) => a - b),
  );
});

test.run();
