import { ServiceError } from '../../protocol/errors.ts';
import type { PaymentRow } from '../../storage/payments/payments.ts';
import { findPayoutAddress } from '../../storage/payments/payout-addresses.ts';
import type { Services } from '../kernel/services.ts';
import { creditVerifiedTransfer } from './chain/credit.ts';
import { verifyTransfer, type NoMatchReason } from './chain/verify.ts';
import { applyPaymentEvent } from './moves.ts';

/**
 * Checking a transaction reported for a payment, whoever reported it: the payer
 * (`report_payment_tx`), anyone (`report_pay_tx`, the pay page, the pay script), or the x402
 * facilitator that settled a signed payment (pay/x402-settle.ts). The transaction is verified on
 * every RPC (./chain/verify.ts) and credited only when it genuinely pays the payment; what the
 * check cannot decide is "unknown", never failed.
 */

/** What an answer says of a check that reached no decision. */
export interface Undecided {
  tx_hash: string;
  reason: string;
  at: number;
}

export type Outcome = { kind: 'as_is' } | { kind: 'undecided'; check: Undecided };

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
export async function report(
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

/**
 * Checks a transaction someone else submitted for `payment` (an x402 facilitator's settlement:
 * pay/x402-settle.ts) as a public report: credited only when it pays the payment; throws the
 * same refusals.
 */
export function checkReportedTx(
  services: Services,
  payment: PaymentRow,
  txHash: string,
): Promise<Outcome> {
  return report(services, payment, txHash.toLowerCase(), 'public');
}
