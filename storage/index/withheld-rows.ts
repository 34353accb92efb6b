import type { Queryable } from '../driver.ts';

/**
 * Moves the public index rows `where` names (an SQL condition on `workspace_id` and `path`, with
 * `id` bound as $1) to where index_row_withheld (migration 039) now puts them: a withheld row
 * leaves the partition the scope views read, a row given back returns to it. Called in the
 * moderation act's transaction, after the act's own update, with its rows locked.
 */
export async function moveWithheldIndexRows(
  tx: Queryable,
  where: string,
  id: string,
): Promise<void> {
  await tx.query(
    `update indexed_versions set withheld = not withheld
     where visibility = 'public' and ${where}
       and withheld <> index_row_withheld(workspace_id, path, visibility)`,
    [id],
  );
}
