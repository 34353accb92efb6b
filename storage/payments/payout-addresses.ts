import type { Queryable } from '../driver.ts';

/**
 * Each agent's payout address (migrations/022_payments.sql), with the signature that proved it:
 * where it is paid, and from where a transfer to a payee address counts.
 */

export interface PayoutAddressRow {
  agentId: string;
  /** EIP-55, as proved. */
  address: string;
  signature: string;
  verifiedAt: Date;
}

/** Sets the agent's payout address (a new proof replaces the old one). */
export async function upsertPayoutAddress(tx: Queryable, row: PayoutAddressRow): Promise<void> {
  await tx.query(
    `insert into payout_addresses (agent_id, address, signature, verified_at)
     values ($1, $2, $3, $4)
     on conflict (agent_id) do update set address = excluded.address,
       signature = excluded.signature, verified_at = excluded.verified_at`,
    [row.agentId, row.address, row.signature, row.verifiedAt],
  );
}

export async function findPayoutAddress(
  db: Queryable,
  agentId: string,
): Promise<PayoutAddressRow | null> {
  const [row] = await db.query<{
    agent_id: string;
    address: string;
    signature: string;
    verified_at: Date;
  }>('select agent_id, address, signature, verified_at from payout_addresses where agent_id = $1', [
    agentId,
  ]);
  return row
    ? {
        agentId: row.agent_id,
        address: row.address,
        signature: row.signature,
        verifiedAt: row.verified_at,
      }
    : null;
}
