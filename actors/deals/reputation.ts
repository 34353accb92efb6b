import { findAgent } from '../../storage/agents/agents.ts';
import { reputationCounts, reputationOf } from '../../storage/deals/reputation.ts';
import { recordStamp, type RecordStamp } from '../../storage/deals/record-changes.ts';
import { lasting } from '../kernel/lasting-answer.ts';
import { notFound } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';

/** The final payments an agent's record lists (newest first): anyone can check each on-chain. */
const PAYMENTS_LISTED = 100;

/** The counts of an agent's record that the store shows beside each of its listings. */
export interface ReputationSummary {
  deals_agreed: number;
  payments_made: number;
  payments_received: number;
  payment_backed_ratings: number;
  /** The mean score of the standing ratings with one; null when none has a score. */
  average_score: number | null;
}

/**
 * The summaries of `agentIds` (the authors of a page of listings) in one query of the counts
 * kept as they changed, the same `reputation` shows; an agent not asked for, or with nothing on
 * record, counts 0.
 */
export async function reputationSummaries(
  services: Services,
  agentIds: readonly string[],
): Promise<(agentId: string) => ReputationSummary> {
  const counts = await reputationCounts(services.db(), agentIds, services.dealPayments.countsSql);
  return (agentId) =>
    counts.get(agentId) ?? {
      deals_agreed: 0,
      payments_made: 0,
      payments_received: 0,
      payment_backed_ratings: 0,
      average_score: null,
    };
}

/**
 * The agent, with its record, for the profile; an agent that is not signed up is not found. The
 * agent and its record are read at once, not one after the other: the reads do not depend on each other, and
 * an unknown id costs a few index look-ups that find nothing.
 */
async function recordOf(services: Services, agentId: string) {
  const [agent, record] = await Promise.all([
    findAgent(services.db(), agentId),
    reputationOf(services.db(), agentId, services.dealPayments.countsSql),
  ]);
  if (!agent) throw notFound('agent');
  return {
    agent_id: agent.agentId,
    name: agent.name,
    since: new Date(agent.createdAt).toISOString(),
    counts: countsOf(record),
    record,
  };
}

/** The counts a record shows, in the order the answer lists them. */
function countsOf({ counts, payments }: Awaited<ReturnType<typeof reputationOf>>) {
  return {
    deals_agreed: counts.deals_agreed,
    payments_made: payments.payments_made,
    payments_received: payments.payments_received,
    payment_backed_ratings: counts.payment_backed_ratings,
    offchain_payments_confirmed: payments.offchain_payments_confirmed,
    distinct_counterparties: counts.distinct_counterparties,
  };
}

/**
 * An agent's public record ("Reputation" in protocol/documents/deals-protocol.md, which gives
 * the formula): its deals agreed, counterparties, standing ratings and final on-chain payments
 * (each with its transaction, to check on a block explorer); confirmed off-chain payments are
 * counted apart and never back a rating. A record this process computed is answered again
 * while the database says nothing it shows changed since (actors/deals/record-cache.ts): one
 * look-up instead of the record's joins, and the same text, serialised once.
 */
export async function reputation(services: Services, agentId: string) {
  const records = services.reputationRecords;
  const now = services.clock.now();
  const stamp = await recordStamp(services.db(), agentId, records.snapshotOf(agentId, now));
  if (!stamp) throw notFound('agent');
  const kept =
    stamp.changed === false ? records.unchanged(agentId, stamp.snapshot, now) : undefined;
  if (kept) return kept as Awaited<ReturnType<typeof computeRecord>>;
  // Read after the stamp's snapshot: a change committed in between makes the next stamp say
  // `changed`, so at worst this record is computed again, never served stale.
  const answer = lasting(await computeRecord(services, agentId, stamp));
  records.keep(agentId, stamp.snapshot, now, answer);
  return answer;
}

async function computeRecord(services: Services, agentId: string, agent: RecordStamp) {
  const [record, payments] = await Promise.all([
    reputationOf(services.db(), agentId, services.dealPayments.countsSql),
    services.dealPayments.ofAgent(services.db(), agentId, PAYMENTS_LISTED),
  ]);
  return {
    agent_id: agentId,
    name: agent.name,
    since: new Date(agent.created_at).toISOString(),
    counts: countsOf(record),
    counterparties: record.counterparties,
    ratings: record.ratings.map((r) => ({
      rating_id: r.ratingId,
      deal_id: r.dealId,
      rater: { agent_id: r.raterId, name: r.raterName },
      delivered_can: r.deliveredCan,
      accepted_on_need: r.acceptedOnNeed,
      score: r.score,
      comment: r.comment,
      // Backed when its deal has a final payment, also one that turned final after the rating.
      payment_backed: r.backedNow,
      at: r.ratedAt.toISOString(),
    })),
    payments,
  };
}

/**
 * The reputation an agent profile shows: the record's counts (as `reputation` has them) and the
 * mean score of the standing ratings with a score, payment-backed or not (null when none).
 */
export async function reputationInBrief(services: Services, agentId: string) {
  const { record, ...agent } = await recordOf(services, agentId);
  return {
    agent: { agent_id: agent.agent_id, name: agent.name, since: agent.since },
    reputation: {
      counts: agent.counts,
      average_score: record.scores.average,
      scored_ratings: record.scores.scored,
      url: `${services.config.baseUrl}/agents/${agent.agent_id}/reputation`,
    },
  };
}
