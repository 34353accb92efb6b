import { findReceivedRating, type ReceivedRating } from '../../storage/deals/received-ratings.ts';
import { ratingPayments } from '../../storage/payments/rating-payments.ts';
import { notFound } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { cardAgentOrNotFound } from './agent-card.ts';

/** "No address": agents are not registered on chain, and a rater may have no payout address. */
const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** Base, the default chain of payments (CHAIN_ID), when the service is given none. */
const DEFAULT_CHAIN_ID = 8453;

/** A UUID read as the unsigned 128-bit integer it is, in decimal (an ERC-721 token id's form). */
function uuidAsUint(uuid: string): string {
  return BigInt(`0x${uuid.replace(/-/g, '')}`).toString(10);
}

/**
 * ERC-8004's value of a rating: a score of 1-5 as `starred` 0-100 (the ERC's example tag for a
 * quality rating), a rating without a score as `delivered` 1 or 0 (binary, as `reachable`).
 */
function valueOf(rating: ReceivedRating) {
  return rating.score !== null
    ? { value: rating.score * 20, valueDecimals: 0, tag1: 'starred' }
    : { value: rating.deliveredCan ? 1 : 0, valueDecimals: 0, tag1: 'delivered' };
}

/**
 * One rating `agentId` received, as an ERC-8004 off-chain feedback file (ERCS/erc-8004.md,
 * "Off-Chain Feedback File Structure"): its MUST fields, tags, the agent's card as the
 * endpoint, `proofOfPayment` when a final USDC payment backs it, and the service's own record.
 * A rating of another agent is not found, as a missing one; so is any rating of a suspended one.
 */
export async function feedbackFile(services: Services, agentId: string, ratingId: string) {
  const agent = await cardAgentOrNotFound(services, agentId);
  const received = await findReceivedRating(services.db(), agent.agentId, ratingId);
  if (!received) throw notFound('rating');
  const rating = {
    ...received,
    ...(await ratingPayments(services.db(), { ...received, rateeId: agent.agentId })),
  };
  const baseUrl = services.config.baseUrl;
  const chainId = rating.payment?.chainId ?? services.config.chain?.chainId ?? DEFAULT_CHAIN_ID;
  return {
    agentRegistry: `eip155:${chainId}:${ZERO_ADDRESS}`,
    agentId: uuidAsUint(agent.agentId),
    clientAddress: `eip155:${chainId}:${rating.raterAddress ?? ZERO_ADDRESS}`,
    createdAt: rating.ratedAt.toISOString(),
    ...valueOf(rating),
    tag2: 'deal',
    endpoint: `${baseUrl}/agents/${agent.agentId}/agent-card.json`,
    ...(rating.payment
      ? {
          proofOfPayment: {
            fromAddress: rating.payment.fromAddress,
            toAddress: rating.payment.toAddress,
            chainId: String(rating.payment.chainId),
            txHash: rating.payment.txHash,
          },
        }
      : {}),
    agent_id: agent.agentId,
    rating_id: rating.ratingId,
    deal_id: rating.dealId,
    rater: { agent_id: rating.raterId, name: rating.raterName },
    delivered_can: rating.deliveredCan,
    accepted_on_need: rating.acceptedOnNeed,
    score: rating.score,
    comment: rating.comment,
    payment_backed: rating.payment !== null,
    superseded_by: rating.supersededBy,
    reputation_url: `${baseUrl}/agents/${agent.agentId}/reputation`,
  };
}
