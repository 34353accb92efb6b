import type { Queryable } from '../driver.ts';

/**
 * A workspace's receipt chain as list_receipts reads it. The receipts are kept with what they
 * record, by the capabilities that issue them; each gives the select that reads its own
 * (actors/receipts/receipt-sources.ts), and this reads their union, newest first.
 */

/**
 * Every receipt of a workspace's chain from `sources` (selects of the workspace `$1`), newest
 * first; of deal files at `path` and the like, when a path is given. For a caller outside the
 * workspace (`outsiderOf`: the workspace's visibility), the receipts that name a file moderation
 * withholds from it are left out: those of the file, of a deal on it, and deliveries that pin it
 * (the rule is the index's index_row_withheld, migration 039, asked of every path a receipt
 * names).
 */
export async function listReceipts(
  db: Queryable,
  sources: readonly string[],
  workspaceId: string,
  path: string | null,
  after: { at: Date; receiptId: string } | null,
  limit: number,
  options: { outsiderOf?: 'private' | 'public' } = {},
): Promise<{ receipt: unknown; at: Date; receiptId: string }[]> {
  if (sources.length === 0) return [];
  const withheld = options.outsiderOf
    ? `and not exists (select 1 from unnest(chain.paths) as named (path)
         where index_row_withheld($1, named.path, $6::text))`
    : '';
  const rows = await db.query<{ receipt: unknown; at: Date; receipt_id: string }>(
    `select receipt, at, receipt_id from (
       ${sources.map((select) => `(${select})`).join('\n       union all\n       ')}
     ) chain
     where ($2::text is null or path = $2::text)
       and ($3::timestamptz is null or (at, receipt_id) < ($3::timestamptz, $4::uuid))
       ${withheld}
     order by at desc, receipt_id desc limit $5`,
    [
      workspaceId,
      path,
      after?.at ?? null,
      after?.receiptId ?? null,
      limit,
      ...(options.outsiderOf ? [options.outsiderOf] : []),
    ],
  );
  return rows.map((row) => ({ receipt: row.receipt, at: row.at, receiptId: row.receipt_id }));
}
