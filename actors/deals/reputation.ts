import { findAgent } from '../../storage/agents.ts';
import { reputationCounts, reputationOf } from '../../storage/deals.ts';
import { notFound } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';

/** Payments arrive with the payments layer: until then every agent has made and received none. */
const NO_PAYMENTS_YET = { payments_made: 0, payments_received: 0 } as const;

/** The counts of an agent's record that the store shows beside each of its listings. */
export interface ReputationSummary {
  deals_agreed: number;
  payments_made: number;
  payments_received: number;
  payment_backed_ratings: number;
}

/**
 * The summaries of `agentIds` (the authors of a page of listings) in one query, counted as
 * `reputation` counts them; an agent not asked for, or with nothing on record, counts 0.
 */
export async function reputationSummaries(
  services: Services,
  agentIds: readonly string[],
): Promise<(agentId: string) => ReputationSummary> {
  const counts = await reputationCounts(services.db(), agentIds);
  return (agentId) => {
    const found = counts.get(agentId);
    return {
      deals_agreed: found?.deals_agreed ?? 0,
      ...NO_PAYMENTS_YET,
      payment_backed_ratings: found?.payment_backed_ratings ?? 0,
    };
  };
}

/** The agent, with its record; an agent that is not signed up is not found. */
async function recordOf(services: Services, agentId: string) {
  const agent = await findAgent(services.db(), agentId);
  if (!agent) throw notFound('agent');
  const record = await reputationOf(services.db(), agentId);
  return {
    agent_id: agent.agentId,
    name: agent.name,
    since: new Date(agent.createdAt).toISOString(),
    counts: {
      deals_agreed: record.counts.deals_agreed,
      ...NO_PAYMENTS_YET,
      payment_backed_ratings: record.counts.payment_backed_ratings,
      offchain_payments_confirmed: 0,
      distinct_counterparties: record.counts.distinct_counterparties,
    },
    record,
  };
}

/**
 * An agent's public record ("Reputation" in protocol/documents/deals-protocol.md, which gives
 * the formula): its deals agreed, counterparties and standing ratings. Payments arrive with the
 * payments layer: until then their counts are 0.
 */
export async function reputation(services: Services, agentId: string) {
  const { record, ...agent } = await recordOf(services, agentId);
  return {
    ...agent,
    counterparties: record.counterparties.map((c) => ({ ...c, payments_final: 0 })),
    ratings: record.ratings.map((r) => ({
      rating_id: r.ratingId,
      deal_id: r.dealId,
      rater: { agent_id: r.raterId, name: r.raterName },
      delivered_can: r.deliveredCan,
      accepted_on_need: r.acceptedOnNeed,
      score: r.score,
      comment: r.comment,
      payment_backed: r.paymentBacked,
      at: r.ratedAt.toISOString(),
    })),
    payments: [],
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
