import type { z } from 'zod';
import { paymentCodec, type PaymentContext } from '../../machines/payment.ts';
import { formatUsdc } from '../../protocol/payments/money.ts';
import type {
  paymentStatusView,
  paymentView,
  paymentWithReceipts,
  x402Authorization,
} from '../../protocol/payments/payments.ts';
import { agentNames } from '../../storage/agents/agent-names.ts';
import { findDeal } from '../../storage/deals/deals.ts';
import { findHeaderFields } from '../../storage/index/version-headers.ts';
import type { Queryable } from '../../storage/driver.ts';
import { receiptsOfPayment, receiptsOfPayments } from '../../storage/payments/payment-receipts.ts';
import { paymentsOfDeal, type PaymentRow } from '../../storage/payments/payments.ts';
import {
  offchainPaymentsOfDeal,
  type OffchainPaymentRow,
} from '../../storage/payments/offchain-payments.ts';
import {
  authorizationOf,
  type AuthorizationRow,
} from '../../storage/payments/x402-authorizations.ts';
import type { DealPaymentAnswer } from '../deals/deal-payments.ts';
import type { ChainAccess } from './chain/clients.ts';
import type { Services } from '../kernel/services.ts';
import { payUrl, publicReportUrl, type PayView } from './pay/view.ts';

/**
 * A payment's answers, from its row: as its parties see it (`get_payment` and `request_payment`
 * with its signed receipts, `report_payment_tx`), as its deal lists it (`get_deal`, with its
 * off-chain payments), as anyone who reports a transaction sees it (`report_pay_tx`: its state
 * only), and the PayView every representation of `pay` is built from.
 */

type PaymentAnswer = z.input<typeof paymentView>;
export type PaymentWithReceiptsAnswer = z.input<typeof paymentWithReceipts>;
export type PaymentStatusAnswer = z.input<typeof paymentStatusView>;

const iso = (ms: number) => new Date(ms).toISOString();

function contextOf(row: PaymentRow): PaymentContext {
  return paymentCodec.restore(row.machine).context;
}

/** Where to send: the payment's deposit address when it has one, else the payee's. */
export function payTo(row: Pick<PaymentRow, 'depositAddress' | 'payeeAddress'>): string {
  return row.depositAddress ?? row.payeeAddress;
}

function paymentAnswer(services: Services, row: PaymentRow): PaymentAnswer {
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
    requested_at_block: row.requestedAtBlock,
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

/** The payment as its parties see it, with its signed receipts, oldest first. */
export async function paymentAnswerWithReceipts(
  services: Services,
  row: PaymentRow,
): Promise<PaymentWithReceiptsAnswer> {
  const [receipts, authorization] = await Promise.all([
    receiptsOfPayment(services.db(), row.paymentId),
    authorizationOf(services.db(), row.paymentId),
  ]);
  return {
    ...paymentAnswer(services, row),
    authorization: authorization && authorizationAnswer(authorization, services.chain),
    receipts: receipts as Record<string, unknown>[],
  };
}

/** A kept signed x402 payment as the payment's parties see it. */
export function authorizationAnswer(
  row: AuthorizationRow,
  chain: Pick<ChainAccess, 'facilitatorUrl'> | null,
): z.input<typeof x402Authorization> {
  return {
    from: row.fromAddress,
    to: row.toAddress,
    value: row.valueUnits.toString(),
    valid_after: row.validAfter.toString(),
    valid_before: row.validBefore.toString(),
    nonce: row.nonce,
    signature: row.signature,
    received_at: row.receivedAt.toISOString(),
    settlement: chain?.facilitatorUrl && row.settleError === null ? 'facilitator' : 'payee',
    settled_tx_hash: row.settledTxHash,
    settle_error: row.settleError,
  };
}

/** The off-chain payment as its parties see it; `receipt` is its confirmation's, or null. */
export function offchainPaymentAnswer(row: OffchainPaymentRow, receipt: unknown) {
  return {
    offchain_payment_id: row.offchainPaymentId,
    deal_id: row.dealId,
    workspace_id: row.workspaceId,
    payer_agent_id: row.payerAgentId,
    payee_agent_id: row.payeeAgentId,
    recorded_by: row.recordedBy,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    means: row.means,
    note: row.note,
    agent_written: { amount: row.amount, currency: row.currency, means: row.means, note: row.note },
    recorded_at: row.recordedAt.toISOString(),
    confirmed_at: row.confirmedAt?.toISOString() ?? null,
    confirmed_by: row.confirmedBy,
    receipt: (receipt ?? null) as Record<string, unknown> | null,
  };
}

/**
 * The deal's payments as get_deal lists them, oldest first: its USDC payments (`kind: "usdc"`,
 * the crediting `tx_hash` from seen on) and its off-chain ones (`kind: "offchain"`), each with
 * its signed receipts.
 */
export async function dealPayments(db: Queryable, dealId: string): Promise<DealPaymentAnswer[]> {
  const payments = await paymentsOfDeal(db, dealId);
  const offchain = await offchainPaymentsOfDeal(db, dealId);
  const receipts = await receiptsOfPayments(db, [
    ...payments.map((p) => p.paymentId),
    ...offchain.map((o) => o.offchainPaymentId),
  ]);
  const receiptsOf = (id: string) => (receipts.get(id) ?? []) as Record<string, unknown>[];
  const listed: { at: Date; payment: DealPaymentAnswer }[] = [
    ...payments.map((row) => ({
      at: row.createdAt,
      payment: {
        kind: 'usdc' as const,
        payment_id: row.paymentId,
        status: row.status,
        amount_usdc: formatUsdc(row.amountUnits),
        payer_agent_id: row.payerAgentId,
        payee_agent_id: row.payeeAgentId,
        memo: row.memo,
        agent_written: { memo: row.memo },
        tx_hash: contextOf(row).evidence?.tx_hash ?? null,
        requested_at: row.createdAt.toISOString(),
        final_at: row.finalAt?.toISOString() ?? null,
        receipts: receiptsOf(row.paymentId),
      },
    })),
    ...offchain.map((row) => ({
      at: row.recordedAt,
      payment: {
        kind: 'offchain' as const,
        ...offchainPaymentAnswer(row, receiptsOf(row.offchainPaymentId)[0] ?? null),
      },
    })),
  ];
  // Stable: a USDC payment and an off-chain one of the same instant keep that order.
  return listed.sort((a, b) => a.at.getTime() - b.at.getTime()).map((entry) => entry.payment);
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
