import type { Queryable } from '../driver.ts';

/** The final on-chain payment that backs a rating: the transfer as the chain told it. */
export interface BackingPayment {
  chainId: number;
  txHash: string;
  fromAddress: string | null;
  toAddress: string | null;
}

/**
 * What payments say of a rating on deal `dealId` from `raterId` to `rateeId`: the rater's
 * verified payout address (EIP-55), if it set one, and the deal's final payment that backs it:
 * the one the rater made to the ratee first, else the deal's earliest final payment (a deal with
 * one turns its ratings payment-backed).
 */
export async function ratingPayments(
  db: Queryable,
  rating: { dealId: string; raterId: string; rateeId: string },
): Promise<{ raterAddress: string | null; payment: BackingPayment | null }> {
  const [row] = await db.query<{
    rater_address: string | null;
    chain_id: string | number | null;
    tx_hash: string | null;
    from_address: string | null;
    to_address: string | null;
  }>(
    `select (select o.address from payout_addresses o where o.agent_id = $2) as rater_address,
       p.chain_id, p.tx_hash, p.from_address, p.to_address
     from (select 1) one
     left join lateral (
       select pay.chain_id, c.tx_hash,
         pay.machine->'context'->'evidence'->>'from' as from_address,
         pay.machine->'context'->'evidence'->>'to' as to_address
       from payments pay join payment_credits c on c.payment_id = pay.payment_id
       where pay.deal_id = $1 and pay.status = 'final'
       order by (pay.payer_agent_id = $2 and pay.payee_agent_id = $3) desc,
         pay.final_at, pay.payment_id
       limit 1
     ) p on true`,
    [rating.dealId, rating.raterId, rating.rateeId],
  );
  return {
    raterAddress: row?.rater_address ?? null,
    payment:
      row && row.chain_id !== null && row.tx_hash !== null
        ? {
            chainId: Number(row.chain_id),
            txHash: row.tx_hash,
            fromAddress: row.from_address,
            toAddress: row.to_address,
          }
        : null,
  };
}
