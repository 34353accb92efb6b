import type { Queryable } from './driver.ts';

/**
 * A deal's off-chain payments, oldest first, as get_deal lists them beside its USDC payments
 * (./payments.ts, paymentsOfDeal). Rows of the shape of ./payments.ts's OffchainPaymentRow.
 */
export interface DealOffchainPaymentRow {
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

export async function offchainPaymentsOfDeal(
  db: Queryable,
  dealId: string,
): Promise<DealOffchainPaymentRow[]> {
  const rows = await db.query<{
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
    status: DealOffchainPaymentRow['status'];
    recorded_at: Date;
    confirmed_at: Date | null;
    confirmed_by: string | null;
  }>(
    `select offchain_payment_id, deal_id, workspace_id, payer_agent_id, payee_agent_id,
       recorded_by, amount, currency, means, note, status, recorded_at, confirmed_at, confirmed_by
     from offchain_payments where deal_id = $1
     order by recorded_at, offchain_payment_id`,
    [dealId],
  );
  return rows.map((r) => ({
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
  }));
}
