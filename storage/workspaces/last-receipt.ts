import type { Queryable } from '../driver.ts';

/**
 * The end of a workspace's receipt chain (actors/receipts/chain.ts): its newest receipt, kept
 * on the workspace's row (`last_receipt`, migrations/005_files.sql), whose lock orders the
 * appends.
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
