import { ServiceError } from '../../protocol/errors.ts';
import { findPayment, type PaymentRow } from '../../storage/payments/payments.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { paymentAnswerWithReceipts, paymentStatusAnswer } from './payment-view.ts';
import { report } from './tx-check.ts';

/**
 * Reporting the transaction that paid a payment: the payer's `report_payment_tx` and the public
 * `report_pay_tx` (the pay page and the pay script, no token). Both verify the transaction on
 * every RPC (./chain/verify.ts) and credit it only when it genuinely pays the payment; what
 * they cannot decide is "unknown", never failed. They differ in what a report may leave behind:
 * the payer's undecided report keeps its hash on the payment (`reported_tx_hash`, `check`),
 * while a stranger's writes nothing unless its transfer pays the payment, so the public door
 * can only ever move a payment forward and never overwrites the payer's own report.
 */

const iso = (ms: number) => new Date(ms).toISOString();

async function reload(services: Services, paymentId: string): Promise<PaymentRow> {
  const row = await findPayment(services.db(), paymentId);
  if (!row) throw notFound('payment');
  return row;
}

export const reportPaymentTx: Handler<'report_payment_tx'> = async (
  { services, principal },
  input,
) => {
  const txHash = input.tx_hash.toLowerCase();
  const payment = await findPayment(services.db(), input.payment_id);
  const agentId = principal.agentId;
  if (!payment || (payment.payerAgentId !== agentId && payment.payeeAgentId !== agentId)) {
    throw notFound('payment');
  }
  if (payment.payerAgentId !== agentId) {
    throw new ServiceError(
      'forbidden',
      'Only the payer reports the transaction that paid a payment; the payee sees it in get_payment once it is found.',
    );
  }
  const outcome = await report(services, payment, txHash, 'payer');
  const answer = await paymentAnswerWithReceipts(
    services,
    await reload(services, payment.paymentId),
  );
  return outcome.kind === 'undecided'
    ? { ...answer, check: { result: 'unknown', ...outcome.check, at: iso(outcome.check.at) } }
    : answer;
};

export const reportPayTx: Handler<'report_pay_tx'> = async ({ services }, input) => {
  const txHash = input.tx_hash.toLowerCase();
  const payment = await findPayment(services.db(), input.payment_id);
  if (!payment) throw notFound('payment');
  const outcome = await report(services, payment, txHash, 'public');
  const answer = paymentStatusAnswer(await reload(services, payment.paymentId));
  return outcome.kind === 'undecided'
    ? { ...answer, check: { result: 'unknown', ...outcome.check, at: iso(outcome.check.at) } }
    : answer;
};
