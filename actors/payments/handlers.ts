import { randomUUID } from 'node:crypto';
import { newPayment, paymentCodec } from '../../machines/payment.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { parseUsdc } from '../../protocol/payments/money.ts';
import { findPayment, insertPayment, type PaymentRow } from '../../storage/payments/payments.ts';
import { findPayoutAddress } from '../../storage/payments/payout-addresses.ts';
import { appendWorkspaceLog } from '../../storage/workspaces/workspace-log.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import type { ChainAccess } from './chain/clients.ts';
import { depositAddress, depositSalt } from './chain/deposit-address.ts';
import { headAtRequest } from './chain/request-head.ts';
import { agreedDealOf, assertOtherParty } from './deal-parties.ts';
import { paymentData } from './moves.ts';
import { paymentAnswerWithReceipts, payTo } from './payment-view.ts';
import { issueRequestedReceipt } from './receipts.ts';

/**
 * request_payment and get_payment ("Payments" in protocol/documents/pay-protocol.md). A payment
 * is requested by its payee, with its signed `payment_requested` receipt; from then on only
 * applyPaymentEvent (./moves.ts) moves it.
 */

/** The chain the service checks payments on, or `503 chain_not_configured`. */
export function configuredChain(services: Services): ChainAccess {
  if (!services.chain) {
    throw new ServiceError(
      'chain_not_configured',
      'On-chain verification is off on this service (no CHAIN_RPC_URL): USDC payments cannot be requested or checked here. Record a payment made another way with record_offchain_payment instead.',
    );
  }
  return services.chain;
}

export const requestPayment: Handler<'request_payment'> = async (
  { services, principal },
  input,
) => {
  const chain = configuredChain(services);
  const amountUnits = parseUsdc(input.amount_usdc);
  const { row: deal, context } = await agreedDealOf(services, principal, input.deal_id);
  assertOtherParty(context, principal, input.payer_agent_id, 'payer_agent_id');
  const payout = await findPayoutAddress(services.db(), principal.agentId);
  if (!payout) {
    throw new ServiceError(
      'payout_address_missing',
      'You have no payout address: set one with set_payout_address (a signed proof that you control it), then request the payment again.',
    );
  }
  // Read before the payment exists: a transfer in this block or an earlier one was made before
  // the request and never pays it (chain/crediting-rules.ts).
  const head = await headAtRequest(chain.clients);
  if (head === null) {
    throw new ServiceError(
      'chain_unavailable',
      'No RPC of this service answered with the chain\u2019s head, so the block after which a transfer counts cannot be fixed: nothing was requested. Retry in a moment.',
    );
  }
  const paymentId = randomUUID();
  const now = services.clock.now();
  const expiresAt = now + chain.expiryMs;
  const deposit = chain.factory
    ? depositAddress({
        factory: chain.factory,
        token: chain.usdc,
        payee: payout.address as `0x${string}`,
        paymentId,
      })
    : null;
  const machine = newPayment({
    payment_id: paymentId,
    amount_units: amountUnits.toString(),
    payee_address: payout.address,
    deposit_address: deposit,
    confirmations_required: chain.confirmations,
    created_at: now,
    expires_at: expiresAt,
  });
  const receipt = await services.payments.create(async (tx) => {
    const record = {
      paymentId,
      dealId: deal.dealId,
      workspaceId: deal.workspaceId,
      payerAgentId: input.payer_agent_id,
      payeeAgentId: principal.agentId,
      memo: input.memo,
      amountUnits,
      payeeAddress: payout.address,
      depositAddress: deposit,
      depositSalt: deposit ? depositSalt(paymentId) : null,
      chainId: chain.chainId,
      tokenAddress: chain.usdc,
      createdAt: new Date(now),
      expiresAt: new Date(expiresAt),
      requestedAtBlock: Number(head),
    };
    const inserted = await insertPayment(tx, { ...record, machine: paymentCodec.persist(machine) });
    if (!inserted) {
      throw new ServiceError(
        'memo_not_unique',
        'This deal already has a payment with that memo: each payment of a deal has its own memo. Use another one (get_deal lists the deal\u2019s payments).',
        { field: 'memo' },
      );
    }
    const data = paymentData(record, 'requested', null);
    await appendWorkspaceLog(tx, {
      workspaceId: deal.workspaceId,
      at: new Date(now),
      kind: 'payment.requested',
      paymentId,
      data: { ...data, by: principal.agentId },
    });
    return {
      result: await issueRequestedReceipt(tx, services, record, payTo(record)),
      changes: [principal.agentId, input.payer_agent_id].map((agentId) => ({
        agentId,
        type: 'payment.requested' as const,
        workspaceId: deal.workspaceId,
        actor: principal.agent,
        data,
      })),
    };
  });
  return {
    ...(await paymentAnswerWithReceipts(services, await mustFind(services, paymentId))),
    receipt,
  };
};

async function mustFind(services: Services, paymentId: string): Promise<PaymentRow> {
  const row = await findPayment(services.db(), paymentId);
  if (!row) throw notFound('payment');
  return row;
}

/** The payment, for its payer or payee; anyone else gets the 404 of a missing one. */
export async function paymentOfParty(
  services: Services,
  principal: Principal,
  paymentId: string,
): Promise<PaymentRow> {
  const row = await findPayment(services.db(), paymentId);
  if (!row || (row.payerAgentId !== principal.agentId && row.payeeAgentId !== principal.agentId)) {
    throw notFound('payment');
  }
  return row;
}

export const getPayment: Handler<'get_payment'> = async ({ services, principal }, input) =>
  paymentAnswerWithReceipts(services, await paymentOfParty(services, principal, input.payment_id));
