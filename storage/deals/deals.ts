import type { Queryable } from '../driver.ts';

/** Deals, agreements, deliveries, ratings (migrations/012_deals.sql). */

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

/**
 * The YAML header the index read from one version of a file (`indexed_versions.fields`); null
 * when the index kept none (not markdown, no header, or one it could not read), and `let_go`
 * when the file was deleted since: a delete empties what the index kept of every version of
 * the path (storage/index/file-index.ts letGoIndexedVersions; `kept_bytes` 0 marks it, as every
 * header kept counts at least the 2 bytes of `{}`).
 */
export async function findVersionHeader(
  db: Queryable,
  workspaceId: string,
  path: string,
  version: number,
): Promise<{ fields: Record<string, unknown> } | 'let_go' | null> {
  const [row] = await db.query<{ fields: Record<string, unknown>; let_go: boolean }>(
    `select fields, kept_bytes = 0 as let_go from indexed_versions
     where workspace_id = $1 and path = $2 and version = $3`,
    [workspaceId, path, version],
  );
  if (!row) return null;
  return row.let_go ? 'let_go' : { fields: row.fields };
}

/** The header's fields of one version (findVersionHeader), or null when none is kept. */
export async function findHeaderFields(
  db: Queryable,
  workspaceId: string,
  path: string,
  version: number,
): Promise<Record<string, unknown> | null> {
  const header = await findVersionHeader(db, workspaceId, path, version);
  return header !== null && header !== 'let_go' ? header.fields : null;
}

/** The name of each agent of `agentIds` that is signed up, by id. */
export async function agentNames(
  db: Queryable,
  agentIds: readonly string[],
): Promise<Map<string, string>> {
  const rows = await db.query<{ agent_id: string; name: string }>(
    'select agent_id, name from agents where agent_id = any($1::uuid[])',
    [agentIds],
  );
  return new Map(rows.map((row) => [row.agent_id, row.name]));
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

export interface AgreementRow {
  agreementId: string;
  dealId: string;
  agentId: string;
  version: number;
  sha256: string;
  parties: string[];
  agreedAt: Date;
  receipt: unknown;
}

export async function insertAgreement(tx: Queryable, row: AgreementRow): Promise<void> {
  await tx.query(
    `insert into deal_agreements (agreement_id, deal_id, agent_id, version, sha256, parties,
       agreed_at, receipt)
     values ($1, $2, $3, $4, $5, $6::uuid[], $7, $8::text::jsonb)`,
    [
      row.agreementId,
      row.dealId,
      row.agentId,
      row.version,
      row.sha256,
      row.parties,
      row.agreedAt,
      JSON.stringify(row.receipt),
    ],
  );
}

export async function findAgreement(
  db: Queryable,
  dealId: string,
  version: number,
  agentId: string,
): Promise<AgreementRow | null> {
  const rows = await listAgreements(db, dealId);
  return rows.find((r) => r.version === version && r.agentId === agentId) ?? null;
}

export async function listAgreements(db: Queryable, dealId: string): Promise<AgreementRow[]> {
  const rows = await db.query<{
    agreement_id: string;
    agent_id: string;
    version: number;
    sha256: string;
    parties: string[];
    agreed_at: Date;
    receipt: unknown;
  }>(
    `select agreement_id, agent_id, version, sha256, parties, agreed_at, receipt
     from deal_agreements where deal_id = $1 order by agreed_at, agreement_id`,
    [dealId],
  );
  return rows.map((r) => ({
    agreementId: r.agreement_id,
    dealId,
    agentId: r.agent_id,
    version: r.version,
    sha256: r.sha256,
    parties: r.parties,
    agreedAt: r.agreed_at,
    receipt: r.receipt,
  }));
}

export interface DeliveryRow {
  deliveryId: string;
  dealId: string;
  agentId: string;
  note: string | null;
  files: { path: string; version: number; size: number; sha256: string }[];
  deliveredAt: Date;
  receipt: unknown;
}

export async function insertDelivery(tx: Queryable, row: DeliveryRow): Promise<void> {
  await tx.query(
    `insert into deal_deliveries (delivery_id, deal_id, agent_id, note, files, delivered_at,
       receipt) values ($1, $2, $3, $4, $5::text::jsonb, $6, $7::text::jsonb)`,
    [
      row.deliveryId,
      row.dealId,
      row.agentId,
      row.note,
      JSON.stringify(row.files),
      row.deliveredAt,
      JSON.stringify(row.receipt),
    ],
  );
}

export async function listDeliveries(db: Queryable, dealId: string): Promise<DeliveryRow[]> {
  const rows = await db.query<{
    delivery_id: string;
    agent_id: string;
    note: string | null;
    files: DeliveryRow['files'];
    delivered_at: Date;
    receipt: unknown;
  }>(
    `select delivery_id, agent_id, note, files, delivered_at, receipt from deal_deliveries
     where deal_id = $1 order by delivered_at, delivery_id`,
    [dealId],
  );
  return rows.map((r) => ({
    deliveryId: r.delivery_id,
    dealId,
    agentId: r.agent_id,
    note: r.note,
    files: r.files,
    deliveredAt: r.delivered_at,
    receipt: r.receipt,
  }));
}

export interface RatingRow {
  ratingId: string;
  dealId: string;
  raterId: string;
  rateeId: string;
  deliveredCan: boolean;
  acceptedOnNeed: boolean;
  score: number | null;
  comment: string | null;
  paymentBacked: boolean;
  ratedAt: Date;
  supersededBy: string | null;
  receipt: unknown;
}

/** A standing rating a new one superseded: its id, and its score the reputation uncounts. */
export interface SupersededRating {
  ratingId: string;
  score: number | null;
}

/**
 * Records a rating; the standing one of the same rater, ratee and deal (if any) is superseded
 * by it, and stays on record. Answers the superseded rating.
 */
export async function insertRating(
  tx: Queryable,
  row: RatingRow,
): Promise<SupersededRating | null> {
  // The foreign key of superseded_by is checked at commit: the new row comes next.
  const [old] = await tx.query<{ rating_id: string; score: number | null }>(
    `update deal_ratings set superseded_by = $4
     where deal_id = $1 and rater_id = $2 and ratee_id = $3 and superseded_by is null
     returning rating_id, score`,
    [row.dealId, row.raterId, row.rateeId, row.ratingId],
  );
  await tx.query(
    `insert into deal_ratings (rating_id, deal_id, rater_id, ratee_id, delivered_can,
       accepted_on_need, score, comment, payment_backed, rated_at, superseded_by, receipt)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, null, $11::text::jsonb)`,
    [
      row.ratingId,
      row.dealId,
      row.raterId,
      row.rateeId,
      row.deliveredCan,
      row.acceptedOnNeed,
      row.score,
      row.comment,
      row.paymentBacked,
      row.ratedAt,
      JSON.stringify(row.receipt),
    ],
  );
  return old ? { ratingId: old.rating_id, score: old.score } : null;
}

type RatingRecord = {
  rating_id: string;
  deal_id: string;
  rater_id: string;
  ratee_id: string;
  delivered_can: boolean;
  accepted_on_need: boolean;
  score: number | null;
  comment: string | null;
  payment_backed: boolean;
  rated_at: Date;
  superseded_by: string | null;
  receipt: unknown;
};

const toRating = (r: RatingRecord): RatingRow => ({
  ratingId: r.rating_id,
  dealId: r.deal_id,
  raterId: r.rater_id,
  rateeId: r.ratee_id,
  deliveredCan: r.delivered_can,
  acceptedOnNeed: r.accepted_on_need,
  score: r.score,
  comment: r.comment,
  paymentBacked: r.payment_backed,
  ratedAt: r.rated_at,
  supersededBy: r.superseded_by,
  receipt: r.receipt,
});

export async function listRatings(db: Queryable, dealId: string): Promise<RatingRow[]> {
  const rows = await db.query<RatingRecord>(
    `select * from deal_ratings where deal_id = $1 order by rated_at, rating_id`,
    [dealId],
  );
  return rows.map(toRating);
}

/** How many counterparties and standing ratings the record lists (most deals, newest first). */
const LISTED = 100;

/**
 * An agent's record (deals-protocol.md, "Reputation"), read from the counts kept as it changed
 * (storage/deals/reputation-counts.ts): no read scans the agent's history. The counterparties with
 * most deals first, and the newest standing ratings, each with whether its deal has a final
 * payment now (a rating made before the payment turned final is backed once it is).
 */
export async function reputationOf(db: Queryable, agentId: string) {
  const [row] = await db.query<{
    deals_agreed: number | null;
    distinct_counterparties: number | null;
    payment_backed_ratings: number | null;
    scored_ratings: number | null;
    average_score: number | null;
    payments_made: number | null;
    payments_received: number | null;
    offchain_payments_confirmed: number | null;
    counterparties:
      { agent_id: string; name: string; deals_agreed: number; payments_final: number }[] | null;
  }>(
    `select k.deals_agreed, k.distinct_counterparties, k.payment_backed_ratings,
       k.scored_ratings,
       round(k.score_total::numeric / nullif(k.scored_ratings, 0), 2)::float8 as average_score,
       c.payments_made, c.payments_received, c.offchain_payments_confirmed,
       (select jsonb_agg(jsonb_build_object('agent_id', t.counterparty_id, 'name', t.name,
          'deals_agreed', t.deals_agreed, 'payments_final', t.payments_final)
          order by t.deals_agreed desc, t.counterparty_id)
        from (select p.counterparty_id, a.name, p.deals_agreed, p.payments_final
              from agent_counterparties p join agents a on a.agent_id = p.counterparty_id
              where p.agent_id = me.agent_id and p.deals_agreed > 0
              order by p.deals_agreed desc, p.counterparty_id limit ${LISTED}) t) as counterparties
     from (select $1::uuid as agent_id) me
     left join agent_reputation k on k.agent_id = me.agent_id
     left join agent_payment_counts c on c.agent_id = me.agent_id`,
    [agentId],
  );
  const counts = {
    deals_agreed: row?.deals_agreed ?? 0,
    distinct_counterparties: row?.distinct_counterparties ?? 0,
    payment_backed_ratings: row?.payment_backed_ratings ?? 0,
  };
  const payments = {
    payments_made: row?.payments_made ?? 0,
    payments_received: row?.payments_received ?? 0,
    offchain_payments_confirmed: row?.offchain_payments_confirmed ?? 0,
  };
  // The mean of the standing ratings' scores (those with one), payment-backed or not.
  const scores = { scored: row?.scored_ratings ?? 0, average: row?.average_score ?? null };
  const ratings = await db.query<RatingRecord & { rater_name: string; payment_final: boolean }>(
    `select r.rating_id, r.deal_id, r.rater_id, r.ratee_id, r.delivered_can, r.accepted_on_need,
       r.score, r.comment, r.payment_backed, r.rated_at, r.superseded_by, null as receipt,
       a.name as rater_name, d.payment_final
     from deal_ratings r
     join agents a on a.agent_id = r.rater_id
     join deals d on d.deal_id = r.deal_id
     where r.ratee_id = $1 and r.superseded_by is null
     order by r.rated_at desc, r.rating_id desc limit ${LISTED}`,
    [agentId],
  );
  return {
    counts,
    payments,
    scores,
    counterparties: row?.counterparties ?? [],
    ratings: ratings.map((r) => ({
      ...toRating(r),
      raterName: r.rater_name,
      backedNow: r.payment_final,
    })),
  };
}

/** The counts of an agent's record the store shows beside each of its listings. */
export type ReputationCounts = {
  deals_agreed: number;
  payments_made: number;
  payments_received: number;
  payment_backed_ratings: number;
  /** The mean score of the standing ratings with one; null when none has a score. */
  average_score: number | null;
};

/**
 * The kept counts the store shows beside each listing, for every agent of `agentIds` in one
 * statement (a page of listings names many authors); an agent with nothing on record counts 0.
 */
export async function reputationCounts(
  db: Queryable,
  agentIds: readonly string[],
): Promise<Map<string, ReputationCounts>> {
  if (agentIds.length === 0) return new Map();
  const rows = await db.query<ReputationCounts & { agent_id: string }>(
    `select me.agent_id, coalesce(k.deals_agreed, 0) as deals_agreed,
       coalesce(c.payments_made, 0) as payments_made,
       coalesce(c.payments_received, 0) as payments_received,
       coalesce(k.payment_backed_ratings, 0) as payment_backed_ratings,
       round(k.score_total::numeric / nullif(k.scored_ratings, 0), 2)::float8 as average_score
     from unnest($1::uuid[]) as me(agent_id)
     left join agent_reputation k on k.agent_id = me.agent_id
     left join agent_payment_counts c on c.agent_id = me.agent_id`,
    [[...new Set(agentIds)]],
  );
  return new Map(rows.map(({ agent_id, ...counts }) => [agent_id, counts]));
}

/** One line of an agent's list of deals. */
export interface DealListRow {
  dealId: string;
  workspaceId: string;
  path: string;
  status: DealRow['status'];
  createdAt: Date;
  agreedVersion: number | null;
  title: string | null;
}

/**
 * The deals `agentId` agreed to or is a party of, newest first, from after `after`; `title` is
 * the header's `deal` of what was agreed (in a draft, of the version being agreed).
 */
export async function listDealsOf(
  db: Queryable,
  agentId: string,
  status: DealRow['status'] | null,
  after: { at: Date; dealId: string } | null,
  limit: number,
): Promise<DealListRow[]> {
  const rows = await db.query<{
    deal_id: string;
    workspace_id: string;
    path: string;
    status: DealRow['status'];
    created_at: Date;
    agreed_version: number | null;
    title: string | null;
  }>(
    `select d.deal_id, d.workspace_id, d.path, d.status, d.created_at,
            (d.machine #>> '{context,agreed,version}')::int as agreed_version,
            v.fields ->> 'deal' as title
     from deals d
     left join indexed_versions v
       on v.workspace_id = d.workspace_id and v.path = d.path
      and v.version = coalesce((d.machine #>> '{context,agreed,version}')::int,
                               (d.machine #>> '{context,round,version}')::int)
     where d.deal_id in (select deal_id from deal_parties where agent_id = $1
                         union select deal_id from deal_agreements where agent_id = $1)
       and ($2::text is null or d.status = $2::text)
       and ($3::timestamptz is null or (d.created_at, d.deal_id) < ($3::timestamptz, $4::uuid))
     order by d.created_at desc, d.deal_id desc
     limit $5`,
    [agentId, status, after?.at ?? null, after?.dealId ?? null, limit],
  );
  return rows.map((row) => ({
    dealId: row.deal_id,
    workspaceId: row.workspace_id,
    path: row.path,
    status: row.status,
    createdAt: row.created_at,
    agreedVersion: row.agreed_version,
    title: row.title,
  }));
}
