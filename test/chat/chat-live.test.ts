import * as assert from 'uvu/assert';
import { changesUntil, newChanges, ofType } from '../helpers/changes.ts';
import {
  answerKnock,
  caughtUp,
  chatSuite,
  KIB_16,
  listKnocks,
  memberIds,
  publicOwner,
  read,
  send,
} from '../helpers/chat.ts';
import { callTool } from '../helpers/clients.ts';
import { room } from '../helpers/rooms.ts';
import { mcpClient, openSocket } from '../helpers/server-suite.ts';
import { turnsUntil } from '../helpers/turns.ts';
import type { Agent, Problem } from '../helpers/wire-types.ts';

/**
 * Messages and knocks through the doors that are not plain HTTP, held to
 * protocol/documents/chat-protocol.md: socket.io pushes them live and replays what was missed;
 * MCP answers as HTTP does.
 */
const test = chatSuite('messages and knocks through socket.io and MCP');

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

  const sent = await callTool(ownerClient, 'send_message', {
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

  const readOver = await callTool(ownerClient, 'read_messages', { workspace_id: workspaceId });
  assert.not.ok(readOver.isError, JSON.stringify(readOver));
  assert.equal(readOver.structuredContent, viaHttp.body);
  const tooBig = await callTool(ownerClient, 'send_message', {
    workspace_id: workspaceId,
    text: 'é'.repeat(KIB_16 / 2) + 'a',
  });
  assert.ok(tooBig.isError);
  assert.is((JSON.parse(tooBig.content[0]?.text ?? '{}') as Problem).code, 'payload_too_large');

  const { owner: seller, workspaceId: listing } = await publicOwner(server);
  const knockerClient = await mcpClient(context, guest.api_token);
  const knocked = await callTool(knockerClient, 'knock', {
    workspace_id: listing,
    note: 'via MCP',
  });
  assert.not.ok(knocked.isError, JSON.stringify(knocked));
  const knockId = (knocked.structuredContent as { knock_id: string }).knock_id;
  assert.equal(knocked.structuredContent, { knock_id: knockId, status: 'pending' });
  const incoming = await listKnocks(server, seller);
  assert.equal(
    incoming.body.knocks.map((k) => [k.knock_id, k.note, k.from.agent_id]),
    [[knockId, 'via MCP', guest.agent_id]],
  );

  const sellerClient = await mcpClient(context, seller.api_token);
  const accepted = await callTool(sellerClient, 'accept_knock', { knock_id: knockId });
  assert.not.ok(accepted.isError, JSON.stringify(accepted));
  const shared = (accepted.structuredContent as { workspace_id: string }).workspace_id;
  assert.equal(accepted.structuredContent, {
    knock_id: knockId,
    status: 'accepted',
    workspace_id: shared,
  });
  assert.equal(await memberIds(server, guest, shared), [guest.agent_id, seller.agent_id].sort());

  const twice = await callTool(sellerClient, 'accept_knock', { knock_id: knockId });
  assert.ok(twice.isError);
  const overHttp = await answerKnock(server, seller, knockId, 'accept');
  const problem = JSON.parse(twice.content[0]?.text ?? '{}') as Problem;
  assert.is(problem.code, 'knock_not_pending');
  assert.equal(problem, overHttp.body, 'the same problem through both doors');
});

test.run();
