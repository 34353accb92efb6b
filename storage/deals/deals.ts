import type { Queryable } from '../driver.ts';

/** The deals' rows and their parties (migrations/012_deals.sql). */

export interface DealRow {
  dealId: string;
  workspaceId: string;
  path: string;
  status: 'draft' | 'agreed' | 'delivered' | 'closed';
  machine: unknown;
  version: number;
  createdAt: Date;
}

type DealRecord = {
  deal_id: string;
  workspace_id: string;
  path: string;
  status: DealRow['status'];
  machine: unknown;
  version: number;
  created_at: Date;
};

const toDeal = (r: DealRecord): DealRow => ({
  dealId: r.deal_id,
  workspaceId: r.workspace_id,
  path: r.path,
  status: r.status,
  machine: r.machine,
  version: r.version,
  createdAt: r.created_at,
});

const DEAL_COLUMNS = 'deal_id, workspace_id, path, status, machine, version, created_at';

export async function findDeal(db: Queryable, dealId: string): Promise<DealRow | null> {
  const [row] = await db.query<DealRecord>(`select ${DEAL_COLUMNS} from deals where deal_id = $1`, [
    dealId,
  ]);
  return row ? toDeal(row) : null;
}

export async function findDealAt(
  db: Queryable,
  workspaceId: string,
  path: string,
): Promise<DealRow | null> {
  const [row] = await db.query<DealRecord>(
    `select ${DEAL_COLUMNS} from deals where workspace_id = $1 and path = $2`,
    [workspaceId, path],
  );
  return row ? toDeal(row) : null;
}

/** Makes the deal's row unless it is there; answers the deal id either way. */
export async function ensureDeal(
  tx: Queryable,
  row: { dealId: string; workspaceId: string; path: string; machine: unknown; createdAt: Date },
): Promise<string> {
  await tx.query(
    `insert into deals (deal_id, workspace_id, path, status, machine, created_at)
     values ($1, $2, $3, 'draft', $4::text::jsonb, $5) on conflict (workspace_id, path) do nothing`,
    [row.dealId, row.workspaceId, row.path, JSON.stringify(row.machine), row.createdAt],
  );
  const found = await findDealAt(tx, row.workspaceId, row.path);
  if (!found) throw new Error('the deal row was not kept');
  return found.dealId;
}

export async function lockDeal(tx: Queryable, dealId: string): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    'select version from deals where deal_id = $1 for update',
    [dealId],
  );
  return row?.version ?? null;
}

export async function updateDeal(
  tx: Queryable,
  dealId: string,
  version: number,
  state: { status: string; machine: unknown },
): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    `update deals set status = $3, machine = $4::text::jsonb, version = version + 1
     where deal_id = $1 and version = $2 returning version`,
    [dealId, version, state.status, JSON.stringify(state.machine)],
  );
  return row?.version ?? null;
}

/**
 * What was agreed changed: its parties join the deal's parties. None leaves: a party of any
 * agreed version stays counted (deals-protocol.md, "Parties for good"). Answers the parties that
 * joined now (the reputation counts them: storage/deals/reputation-counts.ts countPartiesJoined).
 */
export async function addDealParties(
  tx: Queryable,
  dealId: string,
  parties: readonly string[],
  at: Date,
): Promise<string[]> {
  const added = await tx.query<{ agent_id: string }>(
    `insert into deal_parties (deal_id, agent_id, agreed_at)
     select $1, unnest($2::uuid[]), $3
     on conflict (deal_id, agent_id) do nothing
     returning agent_id`,
    [dealId, parties, at],
  );
  return added.map((row) => row.agent_id);
}
