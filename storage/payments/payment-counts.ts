import type { Queryable } from '../driver.ts';

/**
 * The payments an agent's record counts (agent_payment_counts): final on-chain payments made and
 * received, and off-chain payments confirmed, kept by the moves in their own transactions.
 */

export interface PaymentCounts {
  /** Final on-chain payments the agent paid. */
  payments_made: number;
  /** Final on-chain payments the agent was paid. */
  payments_received: number;
  /** Off-chain payments of the agent's (either side) confirmed by the other party. */
  offchain_payments_confirmed: number;
}

/** What an agent's record counts: only final on-chain payments, and confirmed off-chain ones apart. */
export async function paymentCounts(db: Queryable, agentId: string): Promise<PaymentCounts> {
  const counts = await paymentCountsOf(db, [agentId]);
  return (
    counts.get(agentId) ?? {
      payments_made: 0,
      payments_received: 0,
      offchain_payments_confirmed: 0,
    }
  );
}

/**
 * paymentCounts for every agent of `agentIds` in one statement (a store page names many), read
 * from the counters the moves keep (countFinalPayment, countConfirmedOffchain): no recount.
 */
export async function paymentCountsOf(
  db: Queryable,
  agentIds: readonly string[],
): Promise<Map<string, PaymentCounts>> {
  if (agentIds.length === 0) return new Map();
  const rows = await db.query<{
    agent_id: string;
    payments_made: number;
    payments_received: number;
    offchain_payments_confirmed: number;
  }>(
    `select agent_id, payments_made, payments_received, offchain_payments_confirmed
     from agent_payment_counts where agent_id = any($1::uuid[])`,
    [[...new Set(agentIds)]],
  );
  const counts = new Map(
    agentIds.map((agentId): [string, PaymentCounts] => [
      agentId,
      { payments_made: 0, payments_received: 0, offchain_payments_confirmed: 0 },
    ]),
  );
  for (const row of rows) {
    counts.set(row.agent_id, {
      payments_made: row.payments_made,
      payments_received: row.payments_received,
      offchain_payments_confirmed: row.offchain_payments_confirmed,
    });
  }
  return counts;
}

/**
 * Counts a payment that turned final for both its parties, in the transaction of that move
 * (actors/payments/moves.ts), so the counts never disagree with the payments.
 */
export async function countFinalPayment(
  tx: Queryable,
  payerAgentId: string,
  payeeAgentId: string,
): Promise<void> {
  await tx.query(
    `insert into agent_payment_counts (agent_id, payments_made, payments_received)
     values ($1, 1, 0), ($2, 0, 1)
     on conflict (agent_id) do update set
       payments_made = agent_payment_counts.payments_made + excluded.payments_made,
       payments_received = agent_payment_counts.payments_received + excluded.payments_received`,
    [payerAgentId, payeeAgentId],
  );
}

/** Counts an off-chain payment confirmed, for both its parties, in the confirming transaction. */
export async function countConfirmedOffchain(
  tx: Queryable,
  payerAgentId: string,
  payeeAgentId: string,
): Promise<void> {
  await tx.query(
    `insert into agent_payment_counts (agent_id, offchain_payments_confirmed)
     values ($1, 1), ($2, 1)
     on conflict (agent_id) do update set
       offchain_payments_confirmed = agent_payment_counts.offchain_payments_confirmed + 1`,
    [payerAgentId, payeeAgentId],
  );
}
