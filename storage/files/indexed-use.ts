import type { Queryable } from '../driver.ts';

/**
 * Adds `bytes` (negative: gives them back) to what the index keeps for an agent, within its
 * storage use (migration 038): `used_bytes`, which the quota holds, and `index_bytes`, the part
 * `whoami` shows as the index's. Locks the agent's row, as every change of use does.
 */
export async function addIndexedUse(tx: Queryable, agentId: string, bytes: number): Promise<void> {
  await tx.query(
    `insert into storage_usage (agent_id, used_bytes, index_bytes)
     values ($1, greatest($2::int8, 0), greatest($2::int8, 0))
     on conflict (agent_id) do update
       set used_bytes = greatest(storage_usage.used_bytes + $2::int8, 0),
         index_bytes = greatest(storage_usage.index_bytes + $2::int8, 0)`,
    [agentId, bytes],
  );
}
