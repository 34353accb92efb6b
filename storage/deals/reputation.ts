import { agentNameSql } from '../agents/agent-names.ts';
import type { Queryable } from '../driver.ts';
import { toRating } from './ratings.ts';

/**
 * The payments an agent's record counts, as SQL the payments capability gives
 * (storage/payments/deal-counts.ts paymentCountsSql, through the port of
 * actors/deals/deal-payments.ts: payments build on deals, so deals import nothing of them): for
 * the agent whose id the SQL expression `agentId` gives, a table of at most one row with columns
 * `payments_made`, `payments_received` and `offchain_payments_confirmed`.
 */
export type PaymentCountsSql = (agentId: string) => string;

/** How many counterparties and standing ratings the record lists (most deals, newest first). */
const LISTED = 100;

/**
 * An agent's record (deals-protocol.md, "Reputation"), read from the counts kept as it changed
 * (storage/deals/reputation-counts.ts): no read scans the agent's history. The counterparties with
 * most deals first, and the newest standing ratings, each with whether its deal has a final
 * payment now (a rating made before the payment turned final is backed once it is).
 */
export async function reputationOf(
  db: Queryable,
  agentId: string,
  paymentCountsSql: PaymentCountsSql,
) {
  // One statement: the counts, the counterparties and the ratings. The lists come as JSON text,
  // parsed here: on PGlite a hundred rows of a dozen columns cost more to hand from its thread
  // (each row an object cloned across) than one string (bench/reputation.ts: 2.2 to 1.3 ms p50).
  const [row] = await db.query<{
    deals_agreed: number | null;
    distinct_counterparties: number | null;
    payment_backed_ratings: number | null;
    scored_ratings: number | null;
    average_score: number | null;
    payments_made: number | null;
    payments_received: number | null;
    offchain_payments_confirmed: number | null;
    counterparties: string | null;
    ratings: string;
  }>(
    `select k.deals_agreed, k.distinct_counterparties, k.payment_backed_ratings,
       k.scored_ratings,
       round(k.score_total::numeric / nullif(k.scored_ratings, 0), 2)::float8 as average_score,
       c.payments_made, c.payments_received, c.offchain_payments_confirmed,
       (select json_agg(json_build_object('agent_id', t.counterparty_id, 'name', t.name,
          'deals_agreed', t.deals_agreed, 'payments_final', t.payments_final)
          order by t.deals_agreed desc, t.counterparty_id)::text
        from (select p.counterparty_id, a.name, p.deals_agreed, p.payments_final
              from agent_counterparties p
              join lateral ${agentNameSql('p.counterparty_id')} a on true
              where p.agent_id = me.agent_id and p.deals_agreed > 0
              order by p.deals_agreed desc, p.counterparty_id limit ${LISTED}) t) as counterparties,
       (select coalesce(json_agg(json_build_array(t.rating_id, t.deal_id, t.rater_id,
          t.delivered_can, t.accepted_on_need, t.score, t.comment, t.payment_backed, t.rated_at,
          t.rater_name, t.payment_final) order by t.rated_at desc, t.rating_id desc), '[]')::text
        from (select r.rating_id, r.deal_id, r.rater_id, r.delivered_can, r.accepted_on_need,
                r.score, r.comment, r.payment_backed, r.rated_at, a.name as rater_name,
                d.payment_final
              from deal_ratings r
              join lateral ${agentNameSql('r.rater_id')} a on true
              join deals d on d.deal_id = r.deal_id
              where r.ratee_id = me.agent_id and r.superseded_by is null
              order by r.rated_at desc, r.rating_id desc limit ${LISTED}) t) as ratings
     from (select $1::uuid as agent_id) me
     left join agent_reputation k on k.agent_id = me.agent_id
     left join lateral ${paymentCountsSql('me.agent_id')} c on true`,
    [agentId],
  );
  // Each rating as an array, in the order the statement builds it: no key repeated a hundred times.
  type Listed = [
    string,
    string,
    string,
    boolean,
    boolean,
    number | null,
    string | null,
    boolean,
    string,
    string,
    boolean,
  ];
  const ratings = (JSON.parse(row?.ratings ?? '[]') as Listed[]).map(
    ([
      ratingId,
      dealId,
      raterId,
      deliveredCan,
      acceptedOnNeed,
      score,
      comment,
      paymentBacked,
      ratedAt,
      raterName,
      paymentFinal,
    ]) => ({
      ...toRating({
        rating_id: ratingId,
        deal_id: dealId,
        rater_id: raterId,
        ratee_id: agentId,
        delivered_can: deliveredCan,
        accepted_on_need: acceptedOnNeed,
        score,
        comment,
        payment_backed: paymentBacked,
        rated_at: new Date(ratedAt),
        superseded_by: null,
        receipt: null,
      }),
      raterName,
      backedNow: paymentFinal,
    }),
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
  return {
    counts,
    payments,
    scores,
    counterparties: JSON.parse(row?.counterparties ?? '[]') as {
      agent_id: string;
      name: string;
      deals_agreed: number;
      payments_final: number;
    }[],
    ratings,
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
  paymentCountsSql: PaymentCountsSql,
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
     left join lateral ${paymentCountsSql('me.agent_id')} c on true`,
    [[...new Set(agentIds)]],
  );
  return new Map(rows.map(({ agent_id, ...counts }) => [agent_id, counts]));
}
