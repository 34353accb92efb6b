import { agentIdsAmongSql, setAgentSuspendedAt } from './agents/agent-suspensions.ts';
import type { Queryable } from './driver.ts';
import { moveWithheldIndexRows } from './index/withheld-rows.ts';
import {
  listingIdsAmongSql,
  listingPlaceSql,
  setListingHiddenAt,
} from './store/moderated-listings.ts';
import { workspaceOwnersAmongSql, workspacesOwnedBySql } from './workspaces/owned-workspaces.ts';

/**
 * The operator's view over every capability: its acts on listings and agents (each recorded by
 * the owner, then in the index in the same transaction), its log, and the targets abuse reports
 * name. The rows it acts on are the owners' (storage/store/moderated-listings.ts,
 * storage/agents/agent-suspensions.ts); its reads across them stay one statement, composed of
 * the owners' SQL.
 */

/** Hides the listing (`reason`), or shows it again (`at` null), in the index too. */
export async function setListingHidden(
  tx: Queryable,
  listingId: string,
  at: Date | null,
  reason: string | null,
): Promise<void> {
  await setListingHiddenAt(tx, listingId, at, reason);
  await moveWithheldIndexRows(tx, `(workspace_id, path) in (${listingPlaceSql('$1')})`, listingId);
}

/** Suspends the agent (`reason`), or lifts its suspension (`at` null), in the index too. */
export async function setAgentSuspended(
  tx: Queryable,
  agentId: string,
  at: Date | null,
  reason: string | null,
): Promise<void> {
  await setAgentSuspendedAt(tx, agentId, at, reason);
  await moveWithheldIndexRows(tx, `workspace_id in (${workspacesOwnedBySql('$1')})`, agentId);
}

/** One act of the operator, as the log keeps it. */
export interface OperatorLogEntry {
  entryId: string;
  at: Date;
  action: string;
  target: { agent_id: string; listing_id?: string };
  reason: string;
}

export async function insertOperatorLog(tx: Queryable, entry: OperatorLogEntry): Promise<void> {
  await tx.query(
    `insert into operator_log (entry_id, at, action, target, reason)
     values ($1, $2, $3, $4::text::jsonb, $5)`,
    [entry.entryId, entry.at, entry.action, JSON.stringify(entry.target), entry.reason],
  );
}

/** The log, newest first (at desc, entry_id): `fetch` entries strictly after `after`. */
export async function readOperatorLog(
  db: Queryable,
  after: { at: string; entryId: string } | undefined,
  fetch: number,
): Promise<OperatorLogEntry[]> {
  const rows = await db.query<{
    entry_id: string;
    at: Date;
    action: string;
    target: { agent_id: string; listing_id?: string };
    reason: string;
  }>(
    `select entry_id, at, action, target, reason from operator_log
     ${after ? 'where (at < $2::timestamptz or (at = $2::timestamptz and entry_id > $3::uuid))' : ''}
     order by at desc, entry_id limit $1`,
    after ? [fetch, after.at, after.entryId] : [fetch],
  );
  return rows.map((r) => ({
    entryId: r.entry_id,
    at: r.at,
    action: r.action,
    target: r.target,
    reason: r.reason,
  }));
}

/** Of these ids, the ones that name a listing, an agent or a workspace (for abuse reports). */
export async function existingTargets(
  db: Queryable,
  ids: string[],
): Promise<{ kind: 'listing' | 'agent' | 'workspace'; id: string }[]> {
  if (ids.length === 0) return [];
  return db.query<{ kind: 'listing' | 'agent' | 'workspace'; id: string }>(
    `select 'listing' as kind, l.listing_id as id from (${listingIdsAmongSql('$1')}) l
     union all
     select 'agent', a.agent_id from (${agentIdsAmongSql('$1')}) a
     union all
     select 'workspace', w.workspace_id from (${workspaceOwnersAmongSql('$1')}) w`,
    [ids],
  );
}
