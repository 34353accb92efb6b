import { agentNameSql } from '../agents/agent-names.ts';
import type { Queryable } from '../driver.ts';

/** One rating an agent received, as its ERC-8004 feedback file shows it (actors/cards/). */
export interface ReceivedRating {
  ratingId: string;
  dealId: string;
  raterId: string;
  raterName: string;
  deliveredCan: boolean;
  acceptedOnNeed: boolean;
  score: number | null;
  comment: string | null;
  ratedAt: Date;
  supersededBy: string | null;
}

/**
 * The rating `ratingId` if `agentId` received it (another agent's rating is not found, as a
 * missing one), with its rater's name.
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
    delivered_can: boolean;
    accepted_on_need: boolean;
    score: number | null;
    comment: string | null;
    rated_at: Date;
    superseded_by: string | null;
  }>(
    `select r.rating_id, r.deal_id, r.rater_id, rater.name as rater_name,
       r.delivered_can, r.accepted_on_need, r.score, r.comment, r.rated_at, r.superseded_by
     from deal_ratings r
     join lateral ${agentNameSql('r.rater_id')} rater on true
     where r.rating_id = $1 and r.ratee_id = $2`,
    [ratingId, agentId],
  );
  if (!row) return null;
  return {
    ratingId: row.rating_id,
    dealId: row.deal_id,
    raterId: row.rater_id,
    raterName: row.rater_name,
    deliveredCan: row.delivered_can,
    acceptedOnNeed: row.accepted_on_need,
    score: row.score,
    comment: row.comment,
    ratedAt: new Date(row.rated_at),
    supersededBy: row.superseded_by,
  };
}
