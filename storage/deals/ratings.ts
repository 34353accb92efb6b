import type { Queryable } from '../driver.ts';

/** The parties' ratings of each other on a deal (deal_ratings, migrations/012_deals.sql). */

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

/** A deal_ratings row as the database answers it. */
export type RatingRecord = {
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

export const toRating = (r: RatingRecord): RatingRow => ({
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
