import type { Test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ServiceError } from '../../protocol/errors.ts';
import { chatSuite, type ChatContext } from './chat.ts';
import { directDoor, type DirectAgent, type DirectDoor } from './direct.ts';
import { newChanges } from './direct-feed.ts';
import { joinedBy, workspaceOf } from './direct-workspaces.ts';

/**
 * Messages and knocks through the direct door (./direct.ts), as the chat rule suites call them:
 * the chat suite's server and clock, with a door over its services. What only a transport does
 * (sockets, MCP, pages) stays with the suites on ./chat.ts.
 */

export type DirectChatContext = ChatContext & { door: DirectDoor };

/** chatSuite (./chat.ts) with a direct door over its server as `door`. */
export function directChatSuite(name: string): Test<DirectChatContext> {
  const test = chatSuite(name) as unknown as Test<DirectChatContext>;
  test.before((context) => {
    context.door = directDoor(context.server.services);
  });
  return test;
}

/** What whoami counts as unread. */
export async function unread(door: DirectDoor, agent: DirectAgent) {
  return (await door.call('whoami', {}, agent.api_token)).unread;
}

/** An agent that owns a public workspace, and the workspace, its feed read. */
export async function publicOwner(door: DirectDoor) {
  const owner = await door.signUp();
  const workspaceId = await workspaceOf(door, owner, 'public');
  await newChanges(door, owner);
  return { owner, workspaceId };
}

/**
 * A private workspace of `size` new agents (the first owns it, the others joined by invite),
 * each having read its feed: what a test then hears is what it did.
 */
export async function room(door: DirectDoor, size: number) {
  const agents: DirectAgent[] = [];
  for (let i = 0; i < size; i++) agents.push(await door.signUp());
  const [owner] = agents as [DirectAgent];
  const workspaceId = await workspaceOf(door, owner);
  for (const guest of agents.slice(1)) await joinedBy(door, owner, guest, workspaceId);
  for (const agent of agents) await newChanges(door, agent);
  return { workspaceId, agents };
}

/** The sorted ids of the workspace's members, as `agent` sees them. */
export async function memberIds(door: DirectDoor, agent: DirectAgent, workspaceId: string) {
  const shown = await door.call('get_workspace', { workspace_id: workspaceId }, agent.api_token);
  return shown.members.map((m) => m.agent_id).sort();
}

/** `knock_not_pending` carrying what became of the knock as `knock_status` (chat-protocol.md). */
export function assertNotPending(refused: ServiceError, status: string) {
  assert.is(refused.code, 'knock_not_pending', refused.message);
  assert.ok(refused.message.includes(status), `the detail names ${status}: ${refused.message}`);
  assert.is(
    refused.extra.knock_status,
    status,
    'the problem carries the knock status as `knock_status`',
  );
}
