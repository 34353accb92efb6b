import * as assert from 'uvu/assert';
import type { DirectAgent } from '../helpers/direct.ts';
import { directChatSuite, room, unread } from '../helpers/direct-chat.ts';
import { joinedBy } from '../helpers/direct-workspaces.ts';

/**
 * A member joins with the workspace's messages from others after its read mark counted unread
 * (migration 026): the count workspaces take from chat when a member joins
 * (storage/chat.ts unreadOnJoinSql, through the port chat fills at start-up). Through the
 * direct door.
 */
const test = directChatSuite('unread messages on joining, without a transport');

test('a newcomer finds the messages sent before it joined unread, and one that comes back only those after its read mark', async ({
  door,
}) => {
  const { workspaceId, agents } = await room(door, 2);
  const [owner, guest] = agents as [DirectAgent, DirectAgent];
  const send = (agent: DirectAgent, text: string) =>
    door.call('send_message', { workspace_id: workspaceId, text }, agent.api_token);
  for (const text of ['one', 'two']) await send(owner, text);
  await send(guest, 'three');

  const newcomer = await door.signUp();
  await joinedBy(door, owner, newcomer, workspaceId);
  assert.is((await unread(door, newcomer)).messages, 3, 'every message sent before it joined');

  await door.call('read_messages', { workspace_id: workspaceId }, guest.api_token);
  const left = await door.call('leave_workspace', { workspace_id: workspaceId }, guest.api_token);
  assert.equal(left, { workspace_id: workspaceId, left: true });
  await send(owner, 'four');
  await send(newcomer, 'five');
  await joinedBy(door, owner, guest, workspaceId);
  assert.is(
    (await unread(door, guest)).messages,
    2,
    'those sent since it read, before it came back; its own are never unread',
  );
});

test.run();
