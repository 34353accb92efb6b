/**
 * The payments as the deals' reputation counts them, as SQL the deals compose into their own
 * statements (a record read in one statement, the recount of the kept figures in one insert).
 * Payments build on deals, so deals import nothing of this file: the payments capability hands
 * paymentCountsSql over through the deals' port (actors/payments/deal-payments.ts), and the
 * callers of the recount (its test, the benches) pass FINAL_PAYMENTS_SQL.
 */

/**
 * The counts of final payments an agent's record shows (agent_payment_counts), for the agent
 * whose id the SQL expression `agentId` gives: a table of at most one row, with columns
 * `payments_made`, `payments_received` and `offchain_payments_confirmed`. Join it lateral:
 * `left join lateral ${paymentCountsSql('me.agent_id')} c on true` (all null when the agent
 * has no payment counted yet).
 */
export function paymentCountsSql(agentId: string): string {
  return `(select counts.payments_made, counts.payments_received,
       counts.offchain_payments_confirmed
     from agent_payment_counts counts where counts.agent_id = ${agentId})`;
}

/**
 * The payments that turned final, read from the payments themselves (not the kept counts): a
 * table with columns `deal_id`, `payer_agent_id` and `payee_agent_id`, one row per payment. The
 * recount of the reputation reads it (storage/deals/reputation-counts.ts recountReputation).
 */
export const FINAL_PAYMENTS_SQL = `(select paid.deal_id, paid.payer_agent_id,
     paid.payee_agent_id from payments paid where paid.status = 'final')`;
