import { paymentsDueToExpire } from '../../storage/payments/payments.ts';
import type { Services } from '../kernel/services.ts';
import { applyPaymentEvent } from './moves.ts';

/** Due payments are read and expired in batches of this many. */
const BATCH = 500;

/**
 * Expires every requested payment past its time, through the one path a payment moves
 * (applyPaymentEvent): both parties get `payment.expired` and the workspace log a line. Run by
 * the scheduler; safe to run twice and in two processes at once (the machine takes EXPIRE only
 * from `requested`, and each move is written under the payment's version). A payment the
 * watcher credited meanwhile is no longer requested and stays as it is.
 */
export async function expireDuePayments(services: Services, now: Date): Promise<number> {
  let expired = 0;
  for (;;) {
    const due = await paymentsDueToExpire(services.db(), now, BATCH);
    let moved = 0;
    for (const payment of due) {
      const move = await applyPaymentEvent(services, payment.paymentId, {
        type: 'EXPIRE',
        at: now.getTime(),
      });
      if (move?.changed) moved++;
    }
    expired += moved;
    // A full batch none of which moved would be read again: stop rather than spin.
    if (due.length < BATCH || moved === 0) return expired;
  }
}
