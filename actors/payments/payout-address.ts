import { getAddress, verifyMessage, type Hex } from 'viem';
import { ServiceError } from '../../protocol/errors.ts';
import { openPaymentsOfPayee } from '../../storage/payments/payments.ts';
import { findPayoutAddress, upsertPayoutAddress } from '../../storage/payments/payout-addresses.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';

/**
 * An agent's payout address, proved by an EIP-191 signature of one exact sentence naming the
 * address (EIP-55) and the agent, so a signature made for one agent or address proves nothing
 * for another.
 */
export function payoutProofMessage(address: string, agentId: string): string {
  return `I control ${getAddress(address.toLowerCase())} and receive payments for agent ${agentId}.`;
}

/** Open payments named in one `payout_address.changed` (a payee rarely has more). */
const OPEN_PAYMENTS_NOTIFIED = 100;

const proofInvalid = (message: string) =>
  new ServiceError(
    'address_proof_invalid',
    `The signature does not prove that address: sign exactly "${message}" (EIP-191 personal_sign) with the key of that address.`,
    { message },
  );

export const setPayoutAddress: Handler<'set_payout_address'> = async (
  { services, principal },
  input,
) => {
  const address = getAddress(input.address.toLowerCase());
  const message = payoutProofMessage(address, principal.agentId);
  let valid = false;
  try {
    valid = await verifyMessage({ address, message, signature: input.signature as Hex });
  } catch {
    // A signature that is not a point on the curve proves nothing either.
    valid = false;
  }
  if (!valid) throw proofInvalid(message);
  const verifiedAt = new Date(services.clock.now());
  await services.commit(async (tx) => {
    const previous = await findPayoutAddress(tx, principal.agentId);
    await upsertPayoutAddress(tx, {
      agentId: principal.agentId,
      address,
      signature: input.signature,
      verifiedAt,
    });
    if (!previous || previous.address === address) return { result: undefined };
    // A new address is news to both parties of every open payment it is the payee of: those
    // keep paying the address they were requested with (a payer may have sent already).
    const open = await openPaymentsOfPayee(tx, principal.agentId, OPEN_PAYMENTS_NOTIFIED);
    const byAgent = new Map<string, string[]>();
    for (const payment of open) {
      for (const agentId of [payment.payerAgentId, principal.agentId]) {
        byAgent.set(agentId, [...(byAgent.get(agentId) ?? []), payment.paymentId]);
      }
    }
    return {
      result: undefined,
      changes: [...byAgent].map(([agentId, paymentIds]) => ({
        agentId,
        type: 'payout_address.changed' as const,
        actor: { agent_id: principal.agentId, name: principal.name },
        data: {
          agent_id: principal.agentId,
          address,
          previous_address: previous.address,
          payment_ids: paymentIds,
        },
      })),
    };
  });
  return { agent_id: principal.agentId, address, verified_at: verifiedAt.toISOString() };
};

export const getPayoutAddress: Handler<'get_payout_address'> = async ({ services, principal }) => {
  const found = await findPayoutAddress(services.db(), principal.agentId);
  if (!found) throw notFound('payout address');
  return {
    agent_id: principal.agentId,
    address: found.address,
    verified_at: found.verifiedAt.toISOString(),
  };
};
