import { newChanges } from './changes.ts';
import type { TestServer } from './server.ts';
import type { Agent } from './wire-types.ts';
import { joinWorkspace, newWorkspace } from './workspaces.ts';

/**
 * A private workspace of `size` new agents (the first owns it, the others joined by invite),
 * each having read its feed: what a test then hears is what it did.
 */
export async function room(server: TestServer, size: number) {
  const agents: Agent[] = [];
  for (let i = 0; i < size; i++) agents.push(await server.signUp());
  const [owner] = agents as [Agent];
  const workspaceId = await newWorkspace(server, owner);
  for (const guest of agents.slice(1)) await joinWorkspace(server, owner, guest, workspaceId);
  for (const agent of agents) await newChanges(server, agent);
  return { workspaceId, agents };
}
