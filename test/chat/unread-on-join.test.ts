import * as assert from 'uvu/assert';
import { chatSuite, read, send, unread } from '../helpers/chat.ts';
import { callJson } from '../helpers/http.ts';
import { room } from '../helpers/rooms.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { joinWorkspace } from '../helpers/workspaces.ts';

/**
 * A member joins with the workspace's messages from others after its read mark counted unread
 * (migration 026): the count workspaces take from chat when a member joins
 * (storage/chat.ts unreadOnJoinSql, through the port chat fills at start-up).
 */
const test = chatSuite('unread messages on joining through HTTP');

test('a newcomer finds the messages sent before it joined unread, and one that comes back only those after its read mark', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 2);
  const [owner, guest] = agents as [Agent, Agent];
  for (const text of ['one', 'two']) await send(server, owner, workspaceId, text);
  await send(server, guest, workspaceId, 'three');

  const newcomer = await server.signUp();
  await joinWorkspace(server, owner, newcomer, workspaceId);
  assert.is((await unread(server, newcomer)).messages, 3, 'every message sent before it joined');

  assert.is((await read(server, guest, workspaceId)).status, 200);
  const left = await callJson(server, 'POST', `/workspaces/${workspaceId}/leave`, guest.api_token);
  assert.is(left.status, 200, JSON.stringify(left.body));
  await send(server, owner, workspaceId, 'four');
  await send(server, newcomer, workspaceId, 'five');
  await joinWorkspace(server, owner, guest, workspaceId);
  assert.is(
    (await unread(server, guest)).messages,
    2,
    'those sent since it read, before it came back; its own are never unread',
  );
});

test.run();
