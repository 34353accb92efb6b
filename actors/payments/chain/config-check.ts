/**
 * The start-up check of FORWARDER_FACTORY_ADDRESS: the deposit addresses the service shows are
 * computed here (deposit-address.ts), so a factory that would deploy elsewhere (another
 * contract, another compilation, another chain) would send agents' money where no forwarder can
 * ever sweep it. One eth_call of the factory's own `addressOf` for a probe payment must give the
 * address computed here, or the service refuses to start.
 */
import { getAddress, parseAbi, type PublicClient } from 'viem';
import { depositAddress, depositSalt } from './deposit-address.ts';
import type { ChainAccess } from './clients.ts';

const FACTORY_ABI = parseAbi([
  'function addressOf(address token, address payee, bytes32 salt) view returns (address)',
]);

/** A payment id and payee no real payment has: the probe of the check. */
const PROBE_PAYMENT_ID = '00000000-0000-4000-8000-000000000000';
const PROBE_PAYEE = '0x0000000000000000000000000000000000000001';

/** Throws, saying what to fix, unless the factory computes the deposit addresses we show. */
export async function checkForwarderFactory(chain: ChainAccess): Promise<void> {
  const factory = chain.factory;
  const client = chain.clients[0] as PublicClient | undefined;
  if (factory === null || client === undefined) return;
  const expected = depositAddress({
    factory,
    token: chain.usdc,
    payee: PROBE_PAYEE,
    paymentId: PROBE_PAYMENT_ID,
  });
  let onChain: string;
  try {
    onChain = await client.readContract({
      address: factory,
      abi: FACTORY_ABI,
      functionName: 'addressOf',
      args: [chain.usdc, PROBE_PAYEE, depositSalt(PROBE_PAYMENT_ID)],
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new Error(
      `FORWARDER_FACTORY_ADDRESS ${factory}: addressOf() could not be called on chain ${chain.chainId} (${reason}). Is it the ForwarderFactory of actors/payments/contracts, deployed on this chain, and is the RPC reachable?`,
    );
  }
  if (getAddress(onChain) !== expected) {
    throw new Error(
      `FORWARDER_FACTORY_ADDRESS ${factory}: its addressOf() gives ${onChain} where this service computes ${expected}: it is not the ForwarderFactory of actors/payments/contracts/artifacts.json. Deposit addresses would be wrong; refusing to start.`,
    );
  }
}
