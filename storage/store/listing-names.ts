import type { Queryable } from '../driver.ts';
import { currentPublicVersionsSql } from '../index/current-versions.ts';

/**
 * A listing's name: its current version's header `name` (listings are public: so is the name),
 * for the capabilities that show which listing they are about (a knock).
 */

/**
 * SQL for a query of two columns, `listing_id` and `name`: each listing whose current version
 * the index read, with that version's `name` (null when it has none).
 */
export function listingNamesSql(): string {
  return `select l.listing_id, lv.fields ->> 'name' as name from listings l
     join (${currentPublicVersionsSql()}) lv on lv.workspace_id = l.workspace_id
       and lv.path = l.path`;
}

/** A listing's current name (its header's `name`), or null when it has none or is gone. */
export async function listingName(db: Queryable, listingId: string): Promise<string | null> {
  const [row] = await db.query<{ name: string | null }>(
    `select n.name from (${listingNamesSql()}) n where n.listing_id = $1`,
    [listingId],
  );
  return row?.name ?? null;
}
