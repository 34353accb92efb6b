import type { Transaction } from '../../storage/driver.ts';
import { lockLastReceipt, writeLastReceipt } from '../../storage/workspaces/last-receipt.ts';
import { issueReceipt, type Signed, type SignedReceipt, type UnsignedReceipt } from './receipts.ts';
import type { SigningKeys } from './signing-keys.ts';

/**
 * Appends a receipt to its workspace's chain, in the command's transaction: signed with the
 * current key, chained after the workspace's newest receipt whatever that one recorded (a file
 * save or delete, an agreement, a delivery, a rating), and made the newest. Every receipt the
 * service issues in a workspace comes here.
 *
 * The chain is ordered by the workspace's row lock, one way for every writer and every process:
 * the newest receipt is read with the row locked (a workspace command holds that lock already;
 * a deal command takes it here), so an appender in another transaction waits until this one
 * commits and then chains after it. The chain stays one line, and no workspace's version moves:
 * copies of the workspace in other processes stay current (bench/receipt-chain.ts measures it).
 */
export async function appendReceipt<T extends UnsignedReceipt>(
  tx: Transaction,
  keys: SigningKeys,
  workspaceId: string,
  content: T,
): Promise<Signed<T>> {
  const previous = (await lockLastReceipt(tx, workspaceId)) as SignedReceipt | null;
  const signed = await issueReceipt(tx, keys, content, previous);
  await writeLastReceipt(tx, workspaceId, signed);
  return signed;
}
