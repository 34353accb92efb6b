/**
 * The ONE place a payment moves. The watcher, the payer's and the public reports and the expiry
 * job all call `applyPaymentEvent`; nothing else writes a payment's status.
 *
 *   applyPaymentEvent(services, paymentId, event, { beforeStep?, reportedTxHash? })
 *     -> Promise<{ status, changed, aborted } | null>   (null: no such payment)
 *
 * It steps the payment's machine (machines/payment.ts) as one command of its actor, in one
 * transaction (a savepoint of the request's unit of work when called from a handler). When the
 * status changes, the same transaction appends a line to the workspace's log and sends
 * `payment.<status>` (`payment.reorged` for a reorg) to payer and payee, with no acting agent:
 * the chain did it. A move to final also issues the payment's signed `payment_final` receipt
 * (./receipts.ts) in that transaction. On REORGED it releases the payment's credit, so the dropped transfer may
 * credit again when it reappears.
 *
 * Crediting a transfer and the SEEN step commit together or not at all: pass `beforeStep`, which
 * runs first in the move's transaction on the locked, current payment, e.g.
 *
 *   await applyPaymentEvent(services, id, { type: 'SEEN', evidence, at }, {
 *     beforeStep: async (tx) =>
 *       (await creditTransfer(tx, { chainId, txHash, logIndex, paymentId: id })) === 'credited',
 *   });
 *
 * When `beforeStep` answers false, or the machine does not take the event (a SEEN on an expired
 * payment, say), everything the move did, the hook's writes included, is rolled back and the
 * answer says `aborted: true`. `reportedTxHash` keeps (a hash) or clears (null) the payer's
 * reported transaction with the move; it is written only when the machine takes the event.
 * `changed` is true only when the status changed (more confirmations, or an unknown check, are
 * written without a change of status, a log line or an event).
 */
import { formatUsdc } from '../../protocol/payments/money.ts';
import type { PaymentEvent, PaymentStatus } from '../../machines/payment.ts';
import { paymentStatus } from '../../machines/payment.ts';
import type { EventType } from '../../protocol/events.ts';
import type { Transaction } from '../../storage/driver.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import { releaseCredit } from '../../storage/payments/transfer-credits.ts';
import { countFinalPayment } from '../../storage/payments/payment-counts.ts';
import { appendWorkspaceLog } from '../../storage/workspaces/workspace-log.ts';
import { countDealPaymentFinal } from '../../storage/deals/reputation-counts.ts';
import type { Services } from '../kernel/services.ts';
import type { PaymentActor, PaymentRecord } from './actor.ts';
import { issueFinalReceipt } from './receipts.ts';

export interface PaymentMoveOptions {
  /**
   * Runs first in the move's transaction, on the current payment (its row is the one the step
   * is written against): false aborts the move and rolls back what the hook wrote.
   */
  beforeStep?: (tx: Transaction, payment: PaymentActor) => Promise<boolean>;
  /** Keep this reported transaction hash (or clear it: null) with the move. */
  reportedTxHash?: string | null;
}

export interface PaymentMove {
  /** The payment's status after the call (as it was when nothing moved). */
  status: PaymentStatus;
  /** Whether the status changed. */
  changed: boolean;
  /** Nothing was written: `beforeStep` said no, or the machine did not take the event. */
  aborted: boolean;
}

/** Thrown inside the command to roll its transaction back; never leaves this module. */
class MoveAborted extends Error {
  constructor(readonly status: PaymentStatus) {
    super('payment move aborted');
  }
}

export async function applyPaymentEvent(
  services: Services,
  paymentId: string,
  event: PaymentEvent,
  options: PaymentMoveOptions = {},
): Promise<PaymentMove | null> {
  try {
    return await services.payments.command<PaymentMove>(paymentId, async (payment, tx) => {
      const before = payment.status;
      if (options.beforeStep && !(await options.beforeStep(tx, payment))) {
        throw new MoveAborted(before);
      }
      const next = payment.propose(event);
      if (next === undefined) {
        if (options.beforeStep) throw new MoveAborted(before);
        return { result: { status: before, changed: false, aborted: false } };
      }
      const at = new Date(event.at);
      payment.prepareSave(at, options.reportedTxHash);
      const after = paymentStatus(next);
      if (after === before) {
        return { result: { status: after, changed: false, aborted: false }, next };
      }
      if (event.type === 'REORGED') await releaseCredit(tx, paymentId);
      // Reputation's counts move with the payment, in this transaction (final is terminal).
      if (after === 'final') {
        await countFinalPayment(tx, payment.record.payerAgentId, payment.record.payeeAgentId);
        // The proof of the payment, signed and chained in the deal's workspace with the move.
        const evidence = next.context.evidence;
        if (evidence) await issueFinalReceipt(tx, services, payment.record, evidence, at);
        // After the receipt took the workspace's lock, as deal commands take it before the
        // deal's row: the kept reputation counts the payment between the two and, on the
        // deal's first, its standing ratings as payment-backed.
        const { dealId, payerAgentId, payeeAgentId } = payment.record;
        await countDealPaymentFinal(tx, dealId, payerAgentId, payeeAgentId);
      }
      const kind = event.type === 'REORGED' ? 'payment.reorged' : `payment.${after}`;
      const txHash =
        event.type === 'REORGED'
          ? next.context.dropped_tx_hash
          : (next.context.evidence?.tx_hash ?? null);
      const data = paymentData(payment.record, after, txHash);
      await appendWorkspaceLog(tx, {
        workspaceId: payment.record.workspaceId,
        at,
        kind,
        paymentId,
        data,
      });
      return {
        result: { status: after, changed: true, aborted: false },
        next,
        changes: partiesOf(payment).map((agentId): ChangeDraft => ({
          agentId,
          type: kind as EventType,
          workspaceId: payment.record.workspaceId,
          data,
        })),
      };
    });
  } catch (error) {
    if (error instanceof MoveAborted) {
      return { status: error.status, changed: false, aborted: true };
    }
    throw error;
  }
}

function partiesOf(payment: PaymentActor): string[] {
  return [payment.record.payeeAgentId, payment.record.payerAgentId];
}

/**
 * What a payment's event and its log line say (protocol/events.ts, paymentMove): `memo` is the
 * payee's text, data, never instructions.
 */
export function paymentData(
  record: PaymentRecord,
  status: PaymentStatus,
  txHash: string | null,
): Record<string, unknown> {
  return {
    payment_id: record.paymentId,
    deal_id: record.dealId,
    status,
    amount_usdc: formatUsdc(record.amountUnits),
    memo: record.memo,
    payer_agent_id: record.payerAgentId,
    payee_agent_id: record.payeeAgentId,
    ...(txHash !== null && { tx_hash: txHash }),
  };
}
