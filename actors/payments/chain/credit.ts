/**
 * Crediting a verified transfer to a payment: the credit row (one per transfer, ever; one per
 * payment) and the SEEN step commit in one transaction through applyPaymentEvent, or neither
 * does. The unique constraints decide between two credits at once (two reports of one hash for
 * two payments, or the watcher and a report): exactly one is `credited`.
 */
import { findCredit, creditTransfer } from '../../../storage/payments/transfer-credits.ts';
import type { PaymentEvidence } from '../../../machines/payment.ts';
import type { Services } from '../../kernel/services.ts';
import { applyPaymentEvent } from '../moves.ts';

export type CreditOutcome =
  /** The transfer now credits the payment (it is `seen`). */
  | { kind: 'credited' }
  /** It credited this payment already: nothing to do (a repeated report, the watcher after one). */
  | { kind: 'credited_before' }
  /** It credits another payment: a transfer pays once. */
  | { kind: 'credited_elsewhere' }
  /** The payment did not take it (no longer requested, expired, credited by another transfer). */
  | { kind: 'not_taken' };

export async function creditVerifiedTransfer(
  services: Services,
  paymentId: string,
  chainId: number,
  evidence: PaymentEvidence,
  at: number,
): Promise<CreditOutcome> {
  const transfer = { chainId, txHash: evidence.tx_hash, logIndex: evidence.log_index };
  const move = await applyPaymentEvent(
    services,
    paymentId,
    { type: 'SEEN', evidence, at },
    {
      beforeStep: async (tx, payment) => {
        // Only a requested payment takes a transfer: a paid one keeps its own credit.
        if (payment.status !== 'requested') return false;
        return (await creditTransfer(tx, { ...transfer, paymentId })) === 'credited';
      },
      // Credited: the reported hash has done its work.
      reportedTxHash: null,
    },
  );
  if (move && !move.aborted && move.changed) return { kind: 'credited' };
  const holder = await findCredit(services.db(), transfer);
  if (holder === paymentId) return { kind: 'credited_before' };
  if (holder !== null) return { kind: 'credited_elsewhere' };
  return { kind: 'not_taken' };
}
