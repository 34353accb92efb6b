import { ServiceError } from '../../protocol/errors.ts';
import { findPayment, type PaymentRow } from '../../storage/payments/payments.ts';
import { findPayoutAddress } from '../../storage/payments/payout-addresses.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { creditVerifiedTransfer } from './chain/credit.ts';
import { verifyTransfer, type NoMatchReason } from './chain/verify.ts';
import { applyPaymentEvent } from './moves.ts';
import { paymentAnswerWithReceipts, paymentStatusAnswer } from './payment-view.ts';

/**
 * Reporting the transaction that paid a payment: the payer's `report_payment_tx` and the public
 * `report_pay_tx` (the pay page and the pay script, no token). Both verify the transaction on
 * every RPC (./chain/verify.ts) and credit it only when it genuinely pays the payment; what
 * they cannot decide is "unknown", never failed. They differ in what a report may leave behind:
 * the payer's undecided report keeps its hash on the payment (`reported_tx_hash`, `check`),
 * while a stranger's writes nothing unless its transfer pays the payment, so the public door
 * can only ever move a payment forward and never overwrites the payer's own report.
 */

/** What an answer says of a check that reached no decision. */
interface Undecided {
  tx_hash: string;
  reason: string;
  at: number;
}

type Outcome = { kind: 'as_is' } | { kind: 'undecided'; check: Undecided };

const NO_MATCH_WORDS: Record<NoMatchReason, string> = {
  wrong_token: 'its transfers are of another token than the configured USDC contract',
  wrong_recipient: 'no transfer goes to the payment’s deposit address or its payee address',
  wrong_sender:
    'its transfer to the payee address does not come from the payer’s payout address (a transfer to the deposit address may come from anyone)',
  short_amount: 'its transfer is less than the amount asked',
  not_a_transfer: 'it holds no Transfer of the USDC contract',
  reverted: 'it reverted on-chain, so it moved nothing',
  before_request:
    'a transfer made before the payment was requested never pays it, whatever it holds (only one in a later block counts)',
};

function chainOf(services: Services) {
  const chain = services.chain;
  if (!chain) {
    throw new ServiceError(
      'chain_not_configured',
      'On-chain verification is off on this service: no transaction can be checked. Record the payment off-chain instead (record_offchain_payment).',
    );
  }
  return chain;
}

/**
 * Checks `txHash` for `payment` and credits it when it pays. Throws the refusals
 * (tx_not_matching, tx_already_credited); answers whether the payment is to be shown as it now
 * is or with a check that reached no decision.
 */
async function report(
  services: Services,
  payment: PaymentRow,
  txHash: string,
  reporter: 'payer' | 'public',
): Promise<Outcome> {
  const chain = chainOf(services);
  const at = services.clock.now();
  const payer = await findPayoutAddress(services.db(), payment.payerAgentId);
  const verified = await verifyTransfer(chain, payment, txHash, {
    payerAddress: payer?.address ?? null,
    reporter,
    at,
  });
  if (verified.kind === 'no_match' && verified.reason === 'before_request') {
    throw new ServiceError(
      'tx_before_request',
      `Transaction ${txHash} is in block ${verified.blockNumber}, not after block ${payment.requestedAtBlock ?? '(none recorded)'}, the chain\u2019s head when this payment was requested: ${NO_MATCH_WORDS.before_request}. Send a new transfer for this payment.`,
      {
        reason: verified.reason,
        tx_hash: txHash,
        block_number: verified.blockNumber,
        requested_at_block: payment.requestedAtBlock,
      },
    );
  }
  if (verified.kind === 'no_match') {
    throw new ServiceError(
      'tx_not_matching',
      `Transaction ${txHash} does not pay this payment: ${NO_MATCH_WORDS[verified.reason]}.`,
      { reason: verified.reason, tx_hash: txHash },
    );
  }
  if (verified.kind === 'match') {
    const credit = await creditVerifiedTransfer(
      services,
      payment.paymentId,
      chain.chainId,
      verified.evidence,
      at,
    );
    if (credit.kind === 'credited_elsewhere') {
      throw new ServiceError(
        'tx_already_credited',
        `The transfer in transaction ${txHash} already paid another payment; a transfer pays one payment, ever.`,
        { tx_hash: txHash, log_index: verified.logIndex },
      );
    }
    return { kind: 'as_is' };
  }
  const reason =
    verified.kind === 'pending'
      ? 'the transaction is not in a block yet (or no RPC knows it yet); it is checked again'
      : `${verified.reason}; it is checked again`;
  const check = { tx_hash: txHash, reason, at };
  // Only the payer's own report is kept; a paid payment keeps its evidence, not a new doubt.
  if (reporter === 'payer' && payment.status === 'requested') {
    await applyPaymentEvent(
      services,
      payment.paymentId,
      { type: 'CHECKED_UNKNOWN', ...check },
      { reportedTxHash: txHash },
    );
    return { kind: 'as_is' };
  }
  return { kind: 'undecided', check };
}

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
