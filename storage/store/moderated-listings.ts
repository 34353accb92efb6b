import type { Queryable } from '../driver.ts';

/**
 * Listings as the operator moderates them: whose each is, and whether the operator hid it
 * (`listings.hidden_at` and `hidden_reason`, migration 033).
 */

/** A listing as moderation sees it: whose it is and whether the operator hid it. */
export interface ModeratedListing {
  listingId: string;
  authorId: string;
  hidden: boolean;
}

/** The listing, its row locked for the act (null when there is none). */
export async function lockListingForModeration(
  tx: Queryable,
  listingId: string,
): Promise<ModeratedListing | null> {
  const [row] = await tx.query<{ author_id: string; hidden: boolean }>(
    `select author_id, hidden_at is not null as hidden from listings
     where listing_id = $1 for update`,
    [listingId],
  );
  return row ? { listingId, authorId: row.author_id, hidden: row.hidden } : null;
}

/** Records the listing hidden (`reason`), or shown again (`at` null). */
export async function setListingHiddenAt(
  tx: Queryable,
  listingId: string,
  at: Date | null,
  reason: string | null,
): Promise<void> {
  await tx.query('update listings set hidden_at = $2, hidden_reason = $3 where listing_id = $1', [
    listingId,
    at,
    reason,
  ]);
}

/** Whether the operator hid the listing (false for none). */
export async function isListingHidden(db: Queryable, listingId: string): Promise<boolean> {
  const [row] = await db.query<{ hidden: boolean }>(
    'select hidden_at is not null as hidden from listings where listing_id = $1',
    [listingId],
  );
  return row?.hidden ?? false;
}

/** SQL for a query of two columns, `workspace_id` and `path`: where the listing `listingId` is. */
export function listingPlaceSql(listingId: string): string {
  return `select l.workspace_id, l.path from listings l
       where l.listing_id = ${listingId}`;
}

/**
 * SQL for a query of one column, `listing_id`: those of the uuid[] expression `ids` that are
 * listings.
 */
export function listingIdsAmongSql(ids: string): string {
  return `select listing_id from listings where listing_id = any(${ids}::uuid[])`;
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
