import type { DirectDoor } from './direct.ts';
import type { Change } from './wire-types.ts';

/** The changes the agent has not read yet, through the direct door (reading moves its place). */
export async function newChanges(door: DirectDoor, agent: { api_token: string }) {
  return (await door.call('changes', { limit: 500 }, agent.api_token)).changes as Change[];
}
