import type { Queryable } from '../driver.ts';

/**
 * The end of a workspace's receipt chain (actors/receipts/chain.ts): its newest receipt, kept
 * on the workspace's row (`last_receipt`, migrations/005_files.sql). The receipts themselves
 * are kept with what they record (file versions, agreements, deliveries, ratings, payments:
 * ./payment-receipts.ts).
 */

/**
 * The workspace's newest receipt (null before its first), its row locked until the
 * transaction ends: the next appender waits here and then reads what this one wrote.
 */
export async function lockLastReceipt(tx: Queryable, workspaceId: string): Promise<unknown> {
  const [row] = await tx.query<{ last_receipt: unknown }>(
    'select last_receipt from workspaces where workspace_id = $1 for update',
    [workspaceId],
  );
  return row?.last_receipt ?? null;
}

export async function writeLastReceipt(
  tx: Queryable,
  workspaceId: string,
  receipt: unknown,
): Promise<void> {
  await tx.query('update workspaces set last_receipt = $2::text::jsonb where workspace_id = $1', [
    workspaceId,
    JSON.stringify(receipt),
  ]);
}

/**
 * Every receipt of a workspace's chain, newest first: file saves and deletes, and its deals'
 * agreements, deliveries, ratings and payments (of deal files at `path`, when a path is given).
 * For a caller outside the workspace (`outsider`), the receipts that name a file moderation
 * withholds from it are left out: those of the file, of a deal on it, and deliveries that pin
 * it (the rule is index_row_withheld, migration 039, asked of every path a receipt names).
 */
export async function listReceipts(
  db: Queryable,
  workspaceId: string,
  path: string | null,
  after: { at: Date; receiptId: string } | null,
  limit: number,
  options: { outsider?: boolean } = {},
): Promise<{ receipt: unknown; at: Date; receiptId: string }[]> {
  const withheld = options.outsider
    ? `and not exists (select 1 from unnest(chain.paths) as named (path)
         where index_row_withheld($1, named.path,
           (select w.visibility from workspaces w where w.workspace_id = $1)))`
    : '';
  const rows = await db.query<{ receipt: unknown; at: Date; receipt_id: string }>(
    `select receipt, at, receipt_id from (
       select receipt, saved_at as at, (receipt ->> 'receipt_id')::uuid as receipt_id, path,
         array[path] as paths
       from file_versions where workspace_id = $1
       union all
       select a.receipt, a.agreed_at, a.agreement_id, d.path, array[d.path]
       from deal_agreements a join deals d on d.deal_id = a.deal_id where d.workspace_id = $1
       union all
       select x.receipt, x.delivered_at, x.delivery_id, d.path,
         array[d.path] || array(select f ->> 'path' from jsonb_array_elements(x.files) f)
       from deal_deliveries x join deals d on d.deal_id = x.deal_id where d.workspace_id = $1
       union all
       select r.receipt, r.rated_at, r.rating_id, d.path, array[d.path]
       from deal_ratings r join deals d on d.deal_id = r.deal_id where d.workspace_id = $1
       union all
       select p.receipt, p.issued_at, p.receipt_id, d.path, array[d.path]
       from payment_receipts p join deals d on d.deal_id = p.deal_id where p.workspace_id = $1
     ) chain
     where ($2::text is null or path = $2::text)
       and ($3::timestamptz is null or (at, receipt_id) < ($3::timestamptz, $4::uuid))
       ${withheld}
     order by at desc, receipt_id desc limit $5`,
    [workspaceId, path, after?.at ?? null, after?.receiptId ?? null, limit],
  );
  return rows.map((row) => ({ receipt: row.receipt, at: row.at, receiptId: row.receipt_id }));
}
