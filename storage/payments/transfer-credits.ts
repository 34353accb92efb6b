import type { Queryable } from '../driver.ts';

/**
 * Which transfer paid which payment (payment_credits): one credit per transfer and per payment,
 * kept by the unique constraints, released when a reorg drops the transfer.
 */

/** A transfer: one `Transfer` log of one transaction on one chain. */
export interface TransferKey {
  chainId: number;
  /** 0x and 64 hex digits, any case (kept lower-case). */
  txHash: string;
  logIndex: number;
}

/**
 * Credits the transfer to the payment. The unique constraints decide, so two transactions at
 * once get exactly one 'credited': 'already_credited' when the transfer has credited a payment
 * already (this one or another; see findCredit) or the payment has a credit already.
 */
export async function creditTransfer(
  tx: Queryable,
  credit: TransferKey & { paymentId: string },
): Promise<'credited' | 'already_credited'> {
  const inserted = await tx.query(
    `insert into payment_credits (chain_id, tx_hash, log_index, payment_id)
     values ($1, $2, $3, $4)
     on conflict do nothing
     returning payment_id`,
    [credit.chainId, credit.txHash.toLowerCase(), credit.logIndex, credit.paymentId],
  );
  return inserted.length === 1 ? 'credited' : 'already_credited';
}

/** The payment the transfer credited, or null. */
export async function findCredit(db: Queryable, transfer: TransferKey): Promise<string | null> {
  const [row] = await db.query<{ payment_id: string }>(
    `select payment_id from payment_credits
     where chain_id = $1 and tx_hash = $2 and log_index = $3`,
    [transfer.chainId, transfer.txHash.toLowerCase(), transfer.logIndex],
  );
  return row?.payment_id ?? null;
}

/** The transfer that credited the payment, or null. */
export async function creditOfPayment(
  db: Queryable,
  paymentId: string,
): Promise<TransferKey | null> {
  const [row] = await db.query<{ chain_id: number; tx_hash: string; log_index: number }>(
    'select chain_id, tx_hash, log_index from payment_credits where payment_id = $1',
    [paymentId],
  );
  return row ? { chainId: row.chain_id, txHash: row.tx_hash, logIndex: row.log_index } : null;
}

/**
 * A reorg dropped the crediting transfer and the payment goes back to requested: its credit is
 * deleted, so the transfer may credit again if it reappears. False when it had none.
 */
export async function releaseCredit(tx: Queryable, paymentId: string): Promise<boolean> {
  const deleted = await tx.query('delete from payment_credits where payment_id = $1 returning 1', [
    paymentId,
  ]);
  return deleted.length > 0;
}
