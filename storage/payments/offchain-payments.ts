import type { Queryable } from '../driver.ts';

/**
 * Payments made outside the chain (offchain_payments): recorded by one party of a deal and
 * confirmed by the other; the service never sees the money move.
 */

export interface OffchainPaymentRow {
  offchainPaymentId: string;
  dealId: string;
  workspaceId: string;
  payerAgentId: string;
  payeeAgentId: string;
  recordedBy: string;
  amount: string;
  currency: string;
  means: string;
  note: string | null;
  status: 'recorded' | 'confirmed';
  recordedAt: Date;
  confirmedAt: Date | null;
  confirmedBy: string | null;
}

/** Records an off-chain payment, `recorded`, as told by `recordedBy` (one of its parties). */
export async function insertOffchainPayment(
  tx: Queryable,
  row: Omit<OffchainPaymentRow, 'status' | 'confirmedAt' | 'confirmedBy'>,
): Promise<void> {
  await tx.query(
    `insert into offchain_payments (offchain_payment_id, deal_id, workspace_id, payer_agent_id,
       payee_agent_id, recorded_by, amount, currency, means, note, status, recorded_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'recorded', $11)`,
    [
      row.offchainPaymentId,
      row.dealId,
      row.workspaceId,
      row.payerAgentId,
      row.payeeAgentId,
      row.recordedBy,
      row.amount,
      row.currency,
      row.means,
      row.note,
      row.recordedAt,
    ],
  );
}

/** An off-chain payment row as the database gives it. */
interface OffchainPaymentRaw extends Record<string, unknown> {
  offchain_payment_id: string;
  deal_id: string;
  workspace_id: string;
  payer_agent_id: string;
  payee_agent_id: string;
  recorded_by: string;
  amount: string;
  currency: string;
  means: string;
  note: string | null;
  status: OffchainPaymentRow['status'];
  recorded_at: Date;
  confirmed_at: Date | null;
  confirmed_by: string | null;
}

const OFFCHAIN_COLUMNS = `offchain_payment_id, deal_id, workspace_id, payer_agent_id, payee_agent_id,
       recorded_by, amount, currency, means, note, status, recorded_at, confirmed_at, confirmed_by`;

function offchainRow(r: OffchainPaymentRaw): OffchainPaymentRow {
  return {
    offchainPaymentId: r.offchain_payment_id,
    dealId: r.deal_id,
    workspaceId: r.workspace_id,
    payerAgentId: r.payer_agent_id,
    payeeAgentId: r.payee_agent_id,
    recordedBy: r.recorded_by,
    amount: r.amount,
    currency: r.currency,
    means: r.means,
    note: r.note,
    status: r.status,
    recordedAt: r.recorded_at,
    confirmedAt: r.confirmed_at,
    confirmedBy: r.confirmed_by,
  };
}

export async function findOffchainPayment(
  db: Queryable,
  offchainPaymentId: string,
): Promise<OffchainPaymentRow | null> {
  const [r] = await db.query<OffchainPaymentRaw>(
    `select ${OFFCHAIN_COLUMNS} from offchain_payments where offchain_payment_id = $1`,
    [offchainPaymentId],
  );
  return r ? offchainRow(r) : null;
}

/** A deal's off-chain payments, oldest first, as get_deal lists them beside its USDC payments. */
export async function offchainPaymentsOfDeal(
  db: Queryable,
  dealId: string,
): Promise<OffchainPaymentRow[]> {
  const rows = await db.query<OffchainPaymentRaw>(
    `select ${OFFCHAIN_COLUMNS} from offchain_payments where deal_id = $1
     order by recorded_at, offchain_payment_id`,
    [dealId],
  );
  return rows.map(offchainRow);
}

/**
 * The other party confirms a recorded off-chain payment. False (nothing written) unless it is
 * still `recorded` and `by` is its party that did not record it.
 */
export async function confirmOffchainPayment(
  tx: Queryable,
  offchainPaymentId: string,
  by: string,
  at: Date,
): Promise<boolean> {
  const updated = await tx.query(
    `update offchain_payments set status = 'confirmed', confirmed_at = $3, confirmed_by = $2
     where offchain_payment_id = $1 and status = 'recorded'
       and $2::uuid in (payer_agent_id, payee_agent_id) and $2::uuid <> recorded_by
     returning 1`,
    [offchainPaymentId, by, at],
  );
  return updated.length === 1;
}
