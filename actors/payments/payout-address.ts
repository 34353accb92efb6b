import { getAddress, verifyMessage, type Hex } from 'viem';
import { ServiceError } from '../../protocol/errors.ts';
import { findPayoutAddress, upsertPayoutAddress } from '../../storage/payments.ts';
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
    await upsertPayoutAddress(tx, {
      agentId: principal.agentId,
      address,
      signature: input.signature,
      verifiedAt,
    });
    return { result: undefined };
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
