import type { Queryable } from '../driver.ts';

/** One block staged by Put Block (storage/migrations/006_storage_links.sql). */
export interface StagedBlock {
  blockId: string;
  sha256: string;
  size: number;
}

export interface BlockOwner {
  workspaceId: string;
  path: string;
  agentId: string;
}

/**
 * Stages a block, replacing one staged under the same id (as Azure does); answers the replaced
 * block's sha256, or null.
 */
export async function stageBlock(
  tx: Queryable,
  owner: BlockOwner,
  block: StagedBlock & { stagedAt: Date; expiresAt: Date },
): Promise<string | null> {
  const params = [owner.workspaceId, owner.path, owner.agentId, block.blockId];
  const [before] = await tx.query<{ sha256: string }>(
    `select sha256 from staged_blocks
     where workspace_id = $1 and path = $2 and agent_id = $3 and block_id = $4 for update`,
    params,
  );
  await tx.query(
    `insert into staged_blocks
       (workspace_id, path, agent_id, block_id, sha256, size, staged_at, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8)
     on conflict (workspace_id, path, agent_id, block_id) do update set sha256 = excluded.sha256,
       size = excluded.size, staged_at = excluded.staged_at, expires_at = excluded.expires_at`,
    [...params, block.sha256, block.size, block.stagedAt, block.expiresAt],
  );
  return before?.sha256 ?? null;
}

/** The blocks an agent has staged for one path and not yet committed, live at `now`. */
export async function findStagedBlocks(
  db: Queryable,
  owner: BlockOwner,
  now: Date,
): Promise<Map<string, StagedBlock>> {
  const rows = await db.query<{ block_id: string; sha256: string; size: number }>(
    `select block_id, sha256, size from staged_blocks
     where workspace_id = $1 and path = $2 and agent_id = $3 and expires_at > $4`,
    [owner.workspaceId, owner.path, owner.agentId, now],
  );
  return new Map(
    rows.map((row) => [
      row.block_id,
      { blockId: row.block_id, sha256: row.sha256, size: row.size },
    ]),
  );
}

/**
 * Drops every block an agent staged for one path (a commit discards the ones it left out);
 * answers their sha256s.
 */
export async function dropStagedBlocks(tx: Queryable, owner: BlockOwner): Promise<string[]> {
  const rows = await tx.query<{ sha256: string }>(
    `delete from staged_blocks where workspace_id = $1 and path = $2 and agent_id = $3
     returning sha256`,
    [owner.workspaceId, owner.path, owner.agentId],
  );
  return rows.map((row) => row.sha256);
}

/** Drops blocks past their time; answers how many went. */
export async function dropExpiredBlocks(tx: Queryable, now: Date): Promise<number> {
  const rows = await tx.query('delete from staged_blocks where expires_at <= $1 returning 1', [
    now,
  ]);
  return rows.length;
}
