import type { Queryable } from './driver.ts';

/** The agent a card or a feedback file is about: its public name, and whether it is suspended. */
export interface CardAgent {
  agentId: string;
  name: string;
  createdAt: Date;
  suspended: boolean;
}

export async function findCardAgent(db: Queryable, agentId: string): Promise<CardAgent | null> {
  const [row] = await db.query<{
    agent_id: string;
    name: string;
    created_at: Date;
    suspended: boolean;
  }>(
    `select agent_id, name, created_at, suspended_at is not null as suspended
     from agents where agent_id = $1`,
    [agentId],
  );
  return row
    ? {
        agentId: row.agent_id,
        name: row.name,
        createdAt: new Date(row.created_at),
        suspended: row.suspended,
      }
    : null;
}

/** Which of `listingIds` the operator hid (they leave the store and the agent's card). */
export async function hiddenListingIds(
  db: Queryable,
  listingIds: readonly string[],
): Promise<Set<string>> {
  if (listingIds.length === 0) return new Set();
  const rows = await db.query<{ listing_id: string }>(
    `select listing_id from listings
     where listing_id = any($1::uuid[]) and hidden_at is not null`,
    [listingIds],
  );
  return new Set(rows.map((row) => row.listing_id));
}

/** The final on-chain payment that backs a rating: the transfer as the chain told it. */
interface BackingPayment {
  chainId: number;
  txHash: string;
  fromAddress: string | null;
  toAddress: string | null;
}

/** One rating an agent received, with what an ERC-8004 feedback file says of it. */
export interface ReceivedRating {
  ratingId: string;
  dealId: string;
  raterId: string;
  raterName: string;
  /** The rater's verified payout address (EIP-55), if it set one. */
  raterAddress: string | null;
  deliveredCan: boolean;
  acceptedOnNeed: boolean;
  score: number | null;
  comment: string | null;
  ratedAt: Date;
  supersededBy: string | null;
  payment: BackingPayment | null;
}

/**
 * The rating `ratingId` if `agentId` received it (another agent's rating is not found, as a
 * missing one), with the deal's final payment: the one the rater made to the agent first, else
 * the deal's earliest final payment (a deal with one turns its ratings payment-backed).
 */
export async function findReceivedRating(
  db: Queryable,
  agentId: string,
  ratingId: string,
): Promise<ReceivedRating | null> {
  const [row] = await db.query<{
    rating_id: string;
    deal_id: string;
    rater_id: string;
    rater_name: string;
    rater_address: string | null;
    delivered_can: boolean;
    accepted_on_need: boolean;
    score: number | null;
    comment: string | null;
    rated_at: Date;
    superseded_by: string | null;
    chain_id: string | number | null;
    tx_hash: string | null;
    from_address: string | null;
    to_address: string | null;
  }>(
    `select r.rating_id, r.deal_id, r.rater_id, a.name as rater_name, o.address as rater_address,
       r.delivered_can, r.accepted_on_need, r.score, r.comment, r.rated_at, r.superseded_by,
       p.chain_id, p.tx_hash, p.from_address, p.to_address
     from deal_ratings r
     join agents a on a.agent_id = r.rater_id
     left join payout_addresses o on o.agent_id = r.rater_id
     left join lateral (
       select pay.chain_id, c.tx_hash,
         pay.machine->'context'->'evidence'->>'from' as from_address,
         pay.machine->'context'->'evidence'->>'to' as to_address
       from payments pay join payment_credits c on c.payment_id = pay.payment_id
       where pay.deal_id = r.deal_id and pay.status = 'final'
       order by (pay.payer_agent_id = r.rater_id and pay.payee_agent_id = r.ratee_id) desc,
         pay.final_at, pay.payment_id
       limit 1
     ) p on true
     where r.rating_id = $1 and r.ratee_id = $2`,
    [ratingId, agentId],
  );
  if (!row) return null;
  return {
    ratingId: row.rating_id,
    dealId: row.deal_id,
    raterId: row.rater_id,
    raterName: row.rater_name,
    raterAddress: row.rater_address,
    deliveredCan: row.delivered_can,
    acceptedOnNeed: row.accepted_on_need,
    score: row.score,
    comment: row.comment,
    ratedAt: new Date(row.rated_at),
    supersededBy: row.superseded_by,
    payment:
      row.chain_id !== null && row.tx_hash !== null
        ? {
            chainId: Number(row.chain_id),
            txHash: row.tx_hash,
            fromAddress: row.from_address,
            toAddress: row.to_address,
          }
        : null,
  };
}
