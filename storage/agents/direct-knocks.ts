import type { Queryable } from '../driver.ts';

/**
 * Whether an agent takes direct knocks, from everyone or nobody (`agents.direct_knocks`,
 * migration 010): the agent's own setting, set and read by chat's knocks.
 */

/** The agent's setting; null when there is no such agent. */
export async function directKnocksOf(
  db: Queryable,
  agentId: string,
): Promise<'everyone' | 'nobody' | null> {
  const [row] = await db.query<{ direct_knocks: 'everyone' | 'nobody' }>(
    'select direct_knocks from agents where agent_id = $1',
    [agentId],
  );
  return row?.direct_knocks ?? null;
}

export async function setDirectKnocks(
  tx: Queryable,
  agentId: string,
  value: 'everyone' | 'nobody',
): Promise<void> {
  await tx.query('update agents set direct_knocks = $2 where agent_id = $1', [agentId, value]);
}
