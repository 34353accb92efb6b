import type { Queryable } from '../driver.ts';
import { ADVISORY_LOCK } from '../locks.ts';

/** Makes other processes' search for the help workspace wait for this transaction to end. */
export async function lockHelpWorkspace(tx: Queryable): Promise<void> {
  await tx.query(`select pg_advisory_xact_lock(${ADVISORY_LOCK.helpWorkspace})`);
}

/** The oldest public workspace of `ownerAgentId` named `name`, if any. */
export async function findPublicWorkspaceNamed(
  db: Queryable,
  ownerAgentId: string,
  name: string,
): Promise<string | null> {
  const [found] = await db.query<{ workspace_id: string }>(
    `select workspace_id from workspaces where owner_agent_id = $1 and visibility = 'public'
     and name = $2 order by created_at, workspace_id limit 1`,
    [ownerAgentId, name],
  );
  return found?.workspace_id ?? null;
}
