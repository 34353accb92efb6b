import { formatUsdc } from '../../protocol/payments/money.ts';
import { paymentCountsSql } from '../../storage/payments/deal-counts.ts';
import { dealsWithFinalPayment, paymentsOfAgent } from '../../storage/payments/final-payments.ts';
import type { DealPayments } from '../deals/deal-payments.ts';
import { dealPayments } from './payment-view.ts';

/**
 * The payments deals show (actors/deals/deal-payments.ts): whether a deal's ratings are
 * payment-backed, get_deal's `payments` and the final payments of an agent's record. Provided
 * on Services by this capability's start-up step.
 */
export const paymentsOfDeals: DealPayments = {
  withFinalPayment: dealsWithFinalPayment,
  ofDeal: dealPayments,
  async ofAgent(db, agentId, limit) {
    const payments = await paymentsOfAgent(db, agentId, limit);
    return payments.map((p) => ({
      payment_id: p.payment_id,
      deal_id: p.deal_id,
      direction: p.direction,
      counterparty_agent_id: p.counterparty_agent_id,
      amount_usdc: formatUsdc(p.amount_units),
      chain_id: p.chain_id,
      tx_hash: p.tx_hash,
      log_index: p.log_index,
      status: p.status,
      at: p.at.toISOString(),
    }));
  },
  countsSql: paymentCountsSql,
};
