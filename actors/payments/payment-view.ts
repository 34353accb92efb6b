import type { z } from 'zod';
import { paymentCodec, type PaymentContext } from '../../machines/payment.ts';
import { formatUsdc } from '../../protocol/payments-money.ts';
import type { paymentStatusView, paymentView } from '../../protocol/payments.ts';
import { agentNames, findDeal, findHeaderFields } from '../../storage/deals.ts';
import type { PaymentRow } from '../../storage/payments.ts';
import type { Services } from '../kernel/services.ts';
import { payUrl, publicReportUrl, type PayView } from './pay/view.ts';

/**
 * A payment's answers, from its row: as its parties see it (`get_payment`, `request_payment`,
 * `report_payment_tx`), as anyone who reports a transaction sees it (`report_pay_tx`: its state
 * only), and the PayView every representation of `pay` is built from.
 */

export type PaymentAnswer = z.input<typeof paymentView>;
export type PaymentStatusAnswer = z.input<typeof paymentStatusView>;

const iso = (ms: number) => new Date(ms).toISOString();

function contextOf(row: PaymentRow): PaymentContext {
  return paymentCodec.restore(row.machine).context;
}

/** Where to send: the payment's deposit address when it has one, else the payee's. */
export function payTo(row: Pick<PaymentRow, 'depositAddress' | 'payeeAddress'>): string {
  return row.depositAddress ?? row.payeeAddress;
}

export function paymentAnswer(services: Services, row: PaymentRow): PaymentAnswer {
  const context = contextOf(row);
  const evidence = context.evidence;
  return {
    payment_id: row.paymentId,
    deal_id: row.dealId,
    workspace_id: row.workspaceId,
    status: row.status,
    payer_agent_id: row.payerAgentId,
    payee_agent_id: row.payeeAgentId,
    amount_usdc: formatUsdc(row.amountUnits),
    amount_units: row.amountUnits.toString(),
    memo: row.memo,
    agent_written: { memo: row.memo },
    chain_id: row.chainId,
    token_address: row.tokenAddress,
    payee_address: row.payeeAddress,
    deposit_address: row.depositAddress,
    pay_to: payTo(row),
    pay_url: payUrl({ base_url: services.config.baseUrl, payment_id: row.paymentId }),
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    tx_hash: evidence?.tx_hash ?? null,
    confirmations: evidence?.confirmations ?? 0,
    confirmations_required: context.confirmations_required,
    evidence: evidence && {
      tx_hash: evidence.tx_hash,
      log_index: evidence.log_index,
      block_number: evidence.block_number,
      block_hash: evidence.block_hash,
      from: evidence.from,
      to: evidence.to,
      amount_usdc: formatUsdc(BigInt(evidence.amount_units)),
      confirmations: evidence.confirmations,
      checked_at: iso(evidence.checked_at),
      rpc_answers: evidence.rpc_answers,
    },
    check: context.check && { ...context.check, at: iso(context.check.at) },
    reported_tx_hash: row.reportedTxHash,
    history: context.history.map((entry) => ({ ...entry, at: iso(entry.at) })),
  };
}

export function paymentStatusAnswer(row: PaymentRow): PaymentStatusAnswer {
  const context = contextOf(row);
  return {
    payment_id: row.paymentId,
    status: row.status,
    amount_usdc: formatUsdc(row.amountUnits),
    tx_hash: context.evidence?.tx_hash ?? null,
    confirmations: context.evidence?.confirmations ?? 0,
    confirmations_required: context.confirmations_required,
    check: context.check && { ...context.check, at: iso(context.check.at) },
    reported_tx_hash: row.reportedTxHash,
  };
}

/** What `pay` shows: the payment with its deal's title and its parties' names. */
export async function payViewOf(services: Services, row: PaymentRow): Promise<PayView> {
  const db = services.db();
  const names = await agentNames(db, [row.payerAgentId, row.payeeAgentId]);
  const deal = await findDeal(db, row.dealId);
  const agreedVersion = deal && (await services.deals.get(deal.dealId))?.state.context.agreed;
  const header =
    deal && agreedVersion
      ? await findHeaderFields(db, deal.workspaceId, deal.path, agreedVersion.version)
      : null;
  const title = typeof header?.deal === 'string' ? header.deal : (deal?.path ?? '');
  const base = { base_url: services.config.baseUrl, payment_id: row.paymentId };
  return {
    payment_id: row.paymentId,
    status: row.status,
    amount_units: row.amountUnits,
    amount_usdc: formatUsdc(row.amountUnits),
    memo: row.memo,
    chain_id: row.chainId,
    token_address: row.tokenAddress,
    payee_address: row.payeeAddress,
    deposit_address: row.depositAddress,
    pay_to: payTo(row),
    payee: { agent_id: row.payeeAgentId, name: names.get(row.payeeAgentId) ?? '' },
    payer: { agent_id: row.payerAgentId, name: names.get(row.payerAgentId) ?? '' },
    deal: { deal_id: row.dealId, title },
    expires_at: row.expiresAt.toISOString(),
    report_url: publicReportUrl(base),
    payment_url: `${services.config.baseUrl}/payments/${row.paymentId}`,
    base_url: services.config.baseUrl,
  };
}
