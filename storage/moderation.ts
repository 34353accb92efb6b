import type { Queryable } from './driver.ts';

/** A listing as moderation sees it: whose it is and whether the operator hid it. */
export interface ModeratedListing {
  listingId: string;
  authorId: string;
  hidden: boolean;
}

/** The listing, its row locked for the act (null when there is none). */
export async function lockListingForModeration(
  tx: Queryable,
  listingId: string,
): Promise<ModeratedListing | null> {
  const [row] = await tx.query<{ author_id: string; hidden: boolean }>(
    `select author_id, hidden_at is not null as hidden from listings
     where listing_id = $1 for update`,
    [listingId],
  );
  return row ? { listingId, authorId: row.author_id, hidden: row.hidden } : null;
}

/** Hides the listing (`reason`), or shows it again (`at` null), in the index too. */
export async function setListingHidden(
  tx: Queryable,
  listingId: string,
  at: Date | null,
  reason: string | null,
): Promise<void> {
  await tx.query('update listings set hidden_at = $2, hidden_reason = $3 where listing_id = $1', [
    listingId,
    at,
    reason,
  ]);
  await moveIndexRows(
    tx,
    `(workspace_id, path) in (select l.workspace_id, l.path from listings l
       where l.listing_id = $1)`,
    listingId,
  );
}

/**
 * Moves the index rows `where` names to where index_row_withheld (migration 039) now puts them:
 * a withheld row leaves the partition the scope views read, a row given back returns to it.
 * Called in the act's transaction, after the act's own update, with its rows locked.
 */
async function moveIndexRows(tx: Queryable, where: string, id: string): Promise<void> {
  await tx.query(
    `update indexed_versions set withheld = not withheld
     where visibility = 'public' and ${where}
       and withheld <> index_row_withheld(workspace_id, path, visibility)`,
    [id],
  );
}

/** Whether the operator hid the listing (false for none). */
export async function isListingHidden(db: Queryable, listingId: string): Promise<boolean> {
  const [row] = await db.query<{ hidden: boolean }>(
    'select hidden_at is not null as hidden from listings where listing_id = $1',
    [listingId],
  );
  return row?.hidden ?? false;
}

/** An agent as moderation sees it. */
export interface ModeratedAgent {
  agentId: string;
  isOperator: boolean;
  suspended: boolean;
}

/** The agent, its row locked for the act (null when there is none). */
export async function lockAgentForModeration(
  tx: Queryable,
  agentId: string,
): Promise<ModeratedAgent | null> {
  const [row] = await tx.query<{ is_operator: boolean; suspended: boolean }>(
    `select is_operator, suspended_at is not null as suspended from agents
     where agent_id = $1 for update`,
    [agentId],
  );
  return row ? { agentId, isOperator: row.is_operator, suspended: row.suspended } : null;
}

/** Suspends the agent (`reason`), or lifts its suspension (`at` null), in the index too. */
export async function setAgentSuspended(
  tx: Queryable,
  agentId: string,
  at: Date | null,
  reason: string | null,
): Promise<void> {
  await tx.query('update agents set suspended_at = $2, suspended_reason = $3 where agent_id = $1', [
    agentId,
    at,
    reason,
  ]);
  await moveIndexRows(
    tx,
    'workspace_id in (select w.workspace_id from workspaces w where w.owner_agent_id = $1)',
    agentId,
  );
}

/** Whether the agent is suspended (false for none). */
export async function isAgentSuspended(db: Queryable, agentId: string): Promise<boolean> {
  const [row] = await db.query<{ suspended: boolean }>(
    'select suspended_at is not null as suspended from agents where agent_id = $1',
    [agentId],
  );
  return row?.suspended ?? false;
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
    `select 'listing' as kind, listing_id as id from listings where listing_id = any($1::uuid[])
     union all
     select 'agent', agent_id from agents where agent_id = any($1::uuid[])
     union all
     select 'workspace', workspace_id from workspaces where workspace_id = any($1::uuid[])`,
    [ids],
  );
}
