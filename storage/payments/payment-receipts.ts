import { dealPathSql } from '../deals/deal-receipts.ts';
import type { Queryable } from '../driver.ts';

/**
 * The signed receipts of payments (migrations/024_payment_receipts.sql), kept beside the
 * payments they record; the chain's order lives in the receipts themselves (prev_hash), and
 * list_receipts reads them with the workspace's other receipts (./receipts.ts).
 */

export type PaymentReceiptAction =
  'payment_requested' | 'payment_final' | 'offchain_payment_confirmed';

export interface PaymentReceiptRow {
  receiptId: string;
  workspaceId: string;
  dealId: string;
  /** The on-chain payment, or the off-chain one for `offchain_payment_confirmed`. */
  paymentId: string;
  action: PaymentReceiptAction;
  issuedAt: Date;
  receipt: unknown;
}

export async function insertPaymentReceipt(tx: Queryable, row: PaymentReceiptRow): Promise<void> {
  await tx.query(
    `insert into payment_receipts (receipt_id, workspace_id, deal_id, payment_id, action,
       issued_at, receipt)
     values ($1, $2, $3, $4, $5, $6, $7::text::jsonb)`,
    [
      row.receiptId,
      row.workspaceId,
      row.dealId,
      row.paymentId,
      row.action,
      row.issuedAt,
      JSON.stringify(row.receipt),
    ],
  );
}

/** The receipts of one payment (on-chain or off-chain), oldest first. */
export async function receiptsOfPayment(db: Queryable, paymentId: string): Promise<unknown[]> {
  const rows = await db.query<{ receipt: unknown }>(
    `select receipt from payment_receipts where payment_id = $1
     order by issued_at, receipt_id`,
    [paymentId],
  );
  return rows.map((row) => row.receipt);
}

/** The receipts of several payments, oldest first, by payment. */
export async function receiptsOfPayments(
  db: Queryable,
  paymentIds: readonly string[],
): Promise<Map<string, unknown[]>> {
  const byPayment = new Map<string, unknown[]>();
  if (paymentIds.length === 0) return byPayment;
  const rows = await db.query<{ payment_id: string; receipt: unknown }>(
    `select payment_id, receipt from payment_receipts where payment_id = any($1::uuid[])
     order by issued_at, receipt_id`,
    [paymentIds],
  );
  for (const row of rows) {
    const list = byPayment.get(row.payment_id) ?? [];
    list.push(row.receipt);
    byPayment.set(row.payment_id, list);
  }
  return byPayment;
}

/**
 * The payments' part of a workspace's receipt chain (actors/receipts/receipt-sources.ts): each
 * on the file of the payment's deal.
 */
export const PAYMENT_RECEIPTS_SQL = `select p.receipt, p.issued_at as at, p.receipt_id,
    ${dealPathSql('p.deal_id')} as path, array[${dealPathSql('p.deal_id')}] as paths
  from payment_receipts p where p.workspace_id = $1`;
