import {
  paymentCodec,
  paymentStatus,
  type paymentMachine,
  type PaymentSnapshot,
} from '../../machines/payment.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import { findPayment, updatePayment, type PaymentRow } from '../../storage/payments/payments.ts';
import { MachineActor } from '../kernel/machine-actor.ts';

/** What a payment's row says beside its machine: who, what, where; fixed once requested. */
export type PaymentRecord = Omit<
  PaymentRow,
  'status' | 'machine' | 'version' | 'reportedTxHash' | 'finalAt'
>;

/**
 * One payment, live: its machine (requested, seen, confirmed, final, expired) at the version of
 * its row. Its only commands are the moves of actors/payments/moves.ts (applyPaymentEvent).
 */
export class PaymentActor extends MachineActor<typeof paymentMachine> {
  /**
   * What the next save writes beside the machine, set by the command about to step it
   * (`prepareSave`): when the move happened (kept as `final_at` on a move to final) and, when
   * given, the payer's newly reported transaction. Commands of one actor run one at a time.
   */
  private pending: { at: Date; reportedTxHash?: string | null } | null = null;

  constructor(
    readonly record: PaymentRecord,
    snapshot: PaymentSnapshot,
    version: number,
  ) {
    super(paymentCodec, snapshot, version);
  }

  get status() {
    return paymentStatus(this.state);
  }

  prepareSave(at: Date, reportedTxHash?: string | null): void {
    this.pending = reportedTxHash === undefined ? { at } : { at, reportedTxHash };
  }

  protected save(tx: Transaction, next: PaymentSnapshot, machine: unknown): Promise<number | null> {
    const pending = this.pending ?? { at: new Date() };
    this.pending = null;
    return updatePayment(tx, this.record.paymentId, this.version, {
      status: paymentStatus(next),
      machine,
      at: pending.at,
      ...(pending.reportedTxHash !== undefined && { reportedTxHash: pending.reportedTxHash }),
    });
  }
}

export async function loadPaymentActor(
  db: Queryable,
  paymentId: string,
): Promise<PaymentActor | null> {
  const row = await findPayment(db, paymentId);
  if (!row) return null;
  const record: PaymentRecord = {
    paymentId: row.paymentId,
    dealId: row.dealId,
    workspaceId: row.workspaceId,
    payerAgentId: row.payerAgentId,
    payeeAgentId: row.payeeAgentId,
    memo: row.memo,
    amountUnits: row.amountUnits,
    payeeAddress: row.payeeAddress,
    depositAddress: row.depositAddress,
    depositSalt: row.depositSalt,
    chainId: row.chainId,
    tokenAddress: row.tokenAddress,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    requestedAtBlock: row.requestedAtBlock,
  };
  return new PaymentActor(record, paymentCodec.restore(row.machine), row.version);
}
