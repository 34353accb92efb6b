import type { Queryable } from '../driver.ts';

/**
 * The final on-chain payments as the reputation reads them: an agent's public record of them,
 * and which deals have one. Amounts are micro-USDC, read back `::text` (see ./payments.ts).
 */

/** One final payment on an agent's public record: anyone can check it on a block explorer. */
export interface AgentPaymentRecord {
  payment_id: string;
  deal_id: string;
  /** Whether the agent paid it (`made`) or was paid (`received`). */
  direction: 'made' | 'received';
  counterparty_agent_id: string;
  /** micro-USDC. */
  amount_units: bigint;
  chain_id: number;
  /** The crediting transaction and its log (null only if its credit were missing). */
  tx_hash: string | null;
  log_index: number | null;
  status: 'final';
  /** When it turned final. */
  at: Date;
}

/** The agent's final on-chain payments, made and received, newest first, at most `limit`. */
export async function paymentsOfAgent(
  db: Queryable,
  agentId: string,
  limit: number,
): Promise<AgentPaymentRecord[]> {
  const rows = await db.query<{
    payment_id: string;
    deal_id: string;
    direction: 'made' | 'received';
    counterparty_agent_id: string;
    amount_units: string;
    chain_id: number;
    tx_hash: string | null;
    log_index: number | null;
    at: Date;
  }>(
    `select p.payment_id, p.deal_id, p.direction, p.counterparty_agent_id,
       p.amount_units::text as amount_units, p.chain_id, c.tx_hash, c.log_index, p.final_at as at
     from (
       (select payment_id, deal_id, 'made' as direction, payee_agent_id as counterparty_agent_id,
          amount_units, chain_id, final_at from payments
        where payer_agent_id = $1 and status = 'final' order by final_at desc limit $2)
       union all
       (select payment_id, deal_id, 'received', payer_agent_id, amount_units, chain_id, final_at
        from payments
        where payee_agent_id = $1 and status = 'final' order by final_at desc limit $2)
     ) p
     left join payment_credits c on c.payment_id = p.payment_id
     order by p.final_at desc, p.payment_id desc limit $2`,
    [agentId, limit],
  );
  return rows.map((r) => ({
    payment_id: r.payment_id,
    deal_id: r.deal_id,
    direction: r.direction,
    counterparty_agent_id: r.counterparty_agent_id,
    amount_units: BigInt(r.amount_units),
    chain_id: r.chain_id,
    tx_hash: r.tx_hash,
    log_index: r.log_index,
    status: 'final',
    at: r.at,
  }));
}

/** Which of `dealIds` have a final on-chain payment: their ratings are payment-backed. */
export async function dealsWithFinalPayment(
  db: Queryable,
  dealIds: readonly string[],
): Promise<Set<string>> {
  if (dealIds.length === 0) return new Set();
  const rows = await db.query<{ deal_id: string }>(
    `select distinct deal_id from payments
     where deal_id = any($1::uuid[]) and status = 'final'`,
    [[...new Set(dealIds)]],
  );
  return new Set(rows.map((row) => row.deal_id));
}
