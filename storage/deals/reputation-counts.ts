import type { Queryable } from '../driver.ts';

/**
 * Reputation kept as it changes (migrations/028_reputation_counts.sql). Each writer runs in the
 * transaction of the move that earns the count, with upserts that add to the row under its
 * lock, so concurrent moves add up exactly and no read recounts history:
 *
 *   countPartiesJoined(tx, dealId, added)       a deal agreed (its new parties)
 *   countRatingChange(tx, dealId, ratee, old, new)  a rating made, or a correction of one
 *   countDealPaymentFinal(tx, dealId, payer, payee) a payment of the deal turned final
 *
 * `recountReputation` counts the same figures from the history (deal_parties, deal_ratings and
 * the final payments, FinalPaymentsSql): the test compares it with the kept rows, and `rebuildReputationCounts` writes it
 * over them (the repair path, and the bench after loading a fixture by SQL).
 *
 * Rows are always touched in the same order (deal, then counterparty pairs, then agents, each
 * sorted by id), so two moves never wait on each other in a cycle.
 */

/** An agent's kept record (agent_reputation). */
export type KeptReputation = {
  deals_agreed: number;
  distinct_counterparties: number;
  payment_backed_ratings: number;
  scored_ratings: number;
  score_total: number;
};

/** One (agent, counterparty) row: deals both agreed to, final payments between them. */
export type KeptPair = {
  agent_id: string;
  counterparty_id: string;
  deals_agreed: number;
  payments_final: number;
};

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Adds to agents' records; `deltas` holds one entry per agent. */
async function addToAgents(
  tx: Queryable,
  deltas: Map<string, Partial<KeptReputation>>,
): Promise<void> {
  const rows = [...deltas.entries()]
    .sort(([a], [b]) => byId(a, b))
    .map(([agent_id, d]) => ({
      agent_id,
      deals_agreed: d.deals_agreed ?? 0,
      distinct_counterparties: d.distinct_counterparties ?? 0,
      payment_backed_ratings: d.payment_backed_ratings ?? 0,
      scored_ratings: d.scored_ratings ?? 0,
      score_total: d.score_total ?? 0,
    }))
    .filter((row) => Object.values(row).some((value) => typeof value === 'number' && value !== 0));
  if (rows.length === 0) return;
  // Rows there take the deltas (a correction's are negative, which the insert half of an
  // upsert would refuse: its new row is checked before the conflict is); the rest are made.
  const updated = await tx.query<{ agent_id: string }>(
    `update agent_reputation k set
       deals_agreed = k.deals_agreed + r.deals_agreed,
       distinct_counterparties = k.distinct_counterparties + r.distinct_counterparties,
       payment_backed_ratings = k.payment_backed_ratings + r.payment_backed_ratings,
       scored_ratings = k.scored_ratings + r.scored_ratings,
       score_total = k.score_total + r.score_total
     from jsonb_to_recordset($1::text::jsonb) as r(agent_id uuid, deals_agreed int,
       distinct_counterparties int, payment_backed_ratings int, scored_ratings int,
       score_total int)
     where k.agent_id = r.agent_id
     returning k.agent_id`,
    [JSON.stringify(rows)],
  );
  const done = new Set(updated.map((row) => row.agent_id));
  const missing = rows.filter((row) => !done.has(row.agent_id));
  if (missing.length === 0) return;
  await tx.query(
    `insert into agent_reputation (agent_id, deals_agreed, distinct_counterparties,
       payment_backed_ratings, scored_ratings, score_total)
     select agent_id, deals_agreed, distinct_counterparties, payment_backed_ratings,
       scored_ratings, score_total
     from jsonb_to_recordset($1::text::jsonb) as r(agent_id uuid, deals_agreed int,
       distinct_counterparties int, payment_backed_ratings int, scored_ratings int,
       score_total int)
     on conflict (agent_id) do update set
       deals_agreed = agent_reputation.deals_agreed + excluded.deals_agreed,
       distinct_counterparties =
         agent_reputation.distinct_counterparties + excluded.distinct_counterparties,
       payment_backed_ratings =
         agent_reputation.payment_backed_ratings + excluded.payment_backed_ratings,
       scored_ratings = agent_reputation.scored_ratings + excluded.scored_ratings,
       score_total = agent_reputation.score_total + excluded.score_total`,
    [JSON.stringify(missing)],
  );
}

/** Adds to (agent, counterparty) rows; answers the rows as they are after the addition. */
async function addToPairs(
  tx: Queryable,
  pairs: { agent_id: string; counterparty_id: string; deals: number; payments: number }[],
): Promise<{ agent_id: string; deals_agreed: number }[]> {
  if (pairs.length === 0) return [];
  const sorted = [...pairs].sort(
    (a, b) => byId(a.agent_id, b.agent_id) || byId(a.counterparty_id, b.counterparty_id),
  );
  return tx.query<{ agent_id: string; deals_agreed: number }>(
    `insert into agent_counterparties (agent_id, counterparty_id, deals_agreed, payments_final)
     select agent_id, counterparty_id, deals, payments
     from jsonb_to_recordset($1::text::jsonb) as r(agent_id uuid, counterparty_id uuid,
       deals int, payments int)
     on conflict (agent_id, counterparty_id) do update set
       deals_agreed = agent_counterparties.deals_agreed + excluded.deals_agreed,
       payments_final = agent_counterparties.payments_final + excluded.payments_final
     returning agent_id, deals_agreed`,
    [JSON.stringify(sorted)],
  );
}

/**
 * `added` joined the parties of `dealId` (already written to deal_parties, with the deal's
 * other parties): each counts one more deal, and each pair of parties one more shared deal; a
 * pair's first shared deal is one more distinct counterparty.
 */
export async function countPartiesJoined(
  tx: Queryable,
  dealId: string,
  added: readonly string[],
): Promise<void> {
  if (added.length === 0) return;
  const parties = await tx.query<{ agent_id: string }>(
    'select agent_id from deal_parties where deal_id = $1',
    [dealId],
  );
  const isNew = new Set(added);
  const pairs = [];
  for (const { agent_id: a } of parties) {
    for (const { agent_id: b } of parties) {
      if (a !== b && (isNew.has(a) || isNew.has(b))) {
        pairs.push({ agent_id: a, counterparty_id: b, deals: 1, payments: 0 });
      }
    }
  }
  const after = await addToPairs(tx, pairs);
  const deltas = new Map<string, Partial<KeptReputation>>();
  for (const agentId of isNew) deltas.set(agentId, { deals_agreed: 1 });
  for (const row of after) {
    // Increments are serialized by the row's lock: exactly one move sees the pair reach 1.
    if (row.deals_agreed !== 1) continue;
    const delta = deltas.get(row.agent_id) ?? {};
    delta.distinct_counterparties = (delta.distinct_counterparties ?? 0) + 1;
    deltas.set(row.agent_id, delta);
  }
  await addToAgents(tx, deltas);
}

/** What a rating adds to its ratee's record (its score, if it has one). */
export interface CountedRating {
  score: number | null;
}

/**
 * A rating of `rateeId` on `dealId` was recorded, superseding `old` (or none): the ratee's
 * standing ratings lose the old one and gain the new one. Whether the deal's ratings are
 * payment-backed is read under the deal's row lock (shared), so a payment turning final at the
 * same time either is seen here or sees this rating (countDealPaymentFinal).
 */
export async function countRatingChange(
  tx: Queryable,
  dealId: string,
  rateeId: string,
  old: CountedRating | null,
  added: CountedRating,
): Promise<void> {
  const [deal] = await tx.query<{ payment_final: boolean }>(
    'select payment_final from deals where deal_id = $1 for share',
    [dealId],
  );
  const backed = deal?.payment_final ? 1 : 0;
  const weight = (rating: CountedRating | null, sign: number) => ({
    scored: rating && rating.score !== null ? sign : 0,
    total: rating && rating.score !== null ? sign * rating.score : 0,
  });
  const gone = weight(old, -1);
  const come = weight(added, 1);
  await addToAgents(
    tx,
    new Map([
      [
        rateeId,
        {
          payment_backed_ratings: old ? 0 : backed,
          scored_ratings: gone.scored + come.scored,
          score_total: gone.total + come.total,
        },
      ],
    ]),
  );
}

/**
 * A payment of `dealId` from `payer` to `payee` turned final (in that move's transaction):
 * one more final payment between the two, and, when it is the deal's first, every standing
 * rating of the deal turns payment-backed.
 */
export async function countDealPaymentFinal(
  tx: Queryable,
  dealId: string,
  payerAgentId: string,
  payeeAgentId: string,
): Promise<void> {
  // The deal's row first: a rating being recorded on it meanwhile is committed before this
  // goes on (then counted below) or waits and sees the deal backed (countRatingChange).
  const first = await tx.query(
    `update deals set payment_final = true where deal_id = $1 and not payment_final
     returning 1`,
    [dealId],
  );
  await addToPairs(tx, [
    { agent_id: payerAgentId, counterparty_id: payeeAgentId, deals: 0, payments: 1 },
    { agent_id: payeeAgentId, counterparty_id: payerAgentId, deals: 0, payments: 1 },
  ]);
  if (first.length === 0) return;
  const ratees = await tx.query<{ ratee_id: string; ratings: number }>(
    `select ratee_id, count(*)::int as ratings from deal_ratings
     where deal_id = $1 and superseded_by is null group by ratee_id`,
    [dealId],
  );
  await addToAgents(
    tx,
    new Map(ratees.map((r) => [r.ratee_id, { payment_backed_ratings: r.ratings }])),
  );
}

/**
 * The payments that turned final, as SQL the payments capability gives
 * (storage/payments/deal-counts.ts FINAL_PAYMENTS_SQL: payments build on deals, so deals import
 * nothing of them): a table with columns `deal_id`, `payer_agent_id` and `payee_agent_id`, one
 * row per final payment. The recount reads the payments themselves, never the kept counts.
 */
export type FinalPaymentsSql = string;

const recountAgents = (finalPayments: FinalPaymentsSql) => `
  select agent_id, sum(deals)::int as deals_agreed,
    sum(counterparties)::int as distinct_counterparties,
    sum(backed)::int as payment_backed_ratings, sum(scored)::int as scored_ratings,
    sum(total)::int as score_total
  from (
    select agent_id, 1 as deals, 0 as counterparties, 0 as backed, 0 as scored, 0 as total
      from deal_parties
    union all
    select mine.agent_id, 0, count(distinct other.agent_id)::int, 0, 0, 0
      from deal_parties mine
      join deal_parties other on other.deal_id = mine.deal_id and other.agent_id <> mine.agent_id
      group by mine.agent_id
    union all
    select r.ratee_id, 0, 0,
      case when exists (select 1 from ${finalPayments} p where p.deal_id = r.deal_id)
        then 1 else 0 end,
      case when r.score is null then 0 else 1 end, coalesce(r.score, 0)
      from deal_ratings r where r.superseded_by is null
  ) as earned
  group by agent_id`;

const recountPairs = (finalPayments: FinalPaymentsSql) => `
  select agent_id, counterparty_id, sum(deals)::int as deals_agreed,
    sum(paid)::int as payments_final
  from (
    select mine.agent_id, other.agent_id as counterparty_id, 1 as deals, 0 as paid
      from deal_parties mine
      join deal_parties other on other.deal_id = mine.deal_id and other.agent_id <> mine.agent_id
    union all
    select payer_agent_id, payee_agent_id, 0, 1 from ${finalPayments} p
    union all
    select payee_agent_id, payer_agent_id, 0, 1 from ${finalPayments} p
  ) as pairs
  group by agent_id, counterparty_id`;

const recountBackedDeals = (finalPayments: FinalPaymentsSql) =>
  `select distinct deal_id from ${finalPayments} p`;

/** Every kept figure counted again from the history, the slow way (no kept row is read). */
export async function recountReputation(db: Queryable, finalPayments: FinalPaymentsSql) {
  const agents = await db.query<KeptReputation & { agent_id: string }>(
    recountAgents(finalPayments),
  );
  const pairs = await db.query<KeptPair>(recountPairs(finalPayments));
  const backed = await db.query<{ deal_id: string }>(recountBackedDeals(finalPayments));
  return {
    agents: new Map(agents.map(({ agent_id, ...counts }) => [agent_id, counts])),
    pairs: pairs.sort(
      (a, b) => byId(a.agent_id, b.agent_id) || byId(a.counterparty_id, b.counterparty_id),
    ),
    backedDeals: new Set(backed.map((row) => row.deal_id)),
  };
}

/** The kept figures as they are, shaped as recountReputation answers them. */
export async function keptReputationCounts(db: Queryable) {
  const agents = await db.query<KeptReputation & { agent_id: string }>(
    `select agent_id, deals_agreed, distinct_counterparties, payment_backed_ratings,
       scored_ratings, score_total
     from agent_reputation`,
  );
  const pairs = await db.query<KeptPair>(
    'select agent_id, counterparty_id, deals_agreed, payments_final from agent_counterparties',
  );
  const backed = await db.query<{ deal_id: string }>(
    'select deal_id from deals where payment_final',
  );
  return {
    agents: new Map(agents.map(({ agent_id, ...counts }) => [agent_id, counts])),
    pairs: pairs.sort(
      (a, b) => byId(a.agent_id, b.agent_id) || byId(a.counterparty_id, b.counterparty_id),
    ),
    backedDeals: new Set(backed.map((row) => row.deal_id)),
  };
}

/**
 * The repair path: writes the recount over the kept rows, in the caller's transaction (lock
 * out the moves meanwhile, or run it with the service stopped).
 */
export async function rebuildReputationCounts(
  tx: Queryable,
  finalPayments: FinalPaymentsSql,
): Promise<void> {
  const backedDeals = recountBackedDeals(finalPayments);
  await tx.query(
    `update deals set payment_final = (deal_id in (${backedDeals}))
     where payment_final <> (deal_id in (${backedDeals}))`,
  );
  await tx.query('delete from agent_counterparties');
  await tx.query(
    `insert into agent_counterparties (agent_id, counterparty_id, deals_agreed, payments_final)
     ${recountPairs(finalPayments)}`,
  );
  await tx.query('delete from agent_reputation');
  await tx.query(
    `insert into agent_reputation (agent_id, deals_agreed, distinct_counterparties,
       payment_backed_ratings, scored_ratings, score_total)
     ${recountAgents(finalPayments)}`,
  );
}

/** SQL: every agent's payment-backed ratings received (`agent_id`, `figure`), for a join. */
export function paymentBackedRatingsSql(): string {
  return 'select k.agent_id, k.payment_backed_ratings as figure from agent_reputation k';
}
