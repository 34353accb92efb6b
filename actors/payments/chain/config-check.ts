/**
 * The start-up check of the ForwarderFactory: the deposit addresses the service shows are
 * computed here (deposit-address.ts), so a factory that would deploy elsewhere (another
 * contract, another compilation, another chain) would send agents' money where no forwarder can
 * ever sweep it. Where a factory is deployed, one eth_call of its own `addressOf` for a probe
 * payment must give the address computed here, or the service refuses to start.
 *
 * The factory by default (factory.ts) need not be deployed: its address is the same on every
 * chain and nothing else can ever be there, so deposits are credited from USDC's Transfer logs
 * alone and the first sweep deploys it. It only needs the deterministic deployment proxy on the
 * chain, or it could never be deployed: without either, payments get no deposit address.
 */
import { getAddress, parseAbi, type PublicClient } from 'viem';
import { depositAddress, depositSalt } from './deposit-address.ts';
import type { ChainAccess } from './clients.ts';
import { DEPLOYMENT_PROXY, factoryPresence } from './factory.ts';

const FACTORY_ABI = parseAbi([
  'function addressOf(address token, address payee, bytes32 salt) view returns (address)',
]);

/** A payment id and payee no real payment has: the probe of the check. */
const PROBE_PAYMENT_ID = '00000000-0000-4000-8000-000000000000';
const PROBE_PAYEE = '0x0000000000000000000000000000000000000001';

/** The chain access to serve with, and what the start-up log says of its deposit addresses. */
export interface FactoryCheck {
  chain: ChainAccess;
  said: string;
}

/**
 * Throws, saying what to fix, when a deployed factory does not compute the deposit addresses we
 * show, or when FORWARDER_FACTORY_ADDRESS names no factory. Answers the access to serve with:
 * without its factory, when the default factory can never be deployed on this chain.
 */
export async function checkForwarderFactory(chain: ChainAccess): Promise<FactoryCheck> {
  const factory = chain.factory;
  const client = chain.clients[0] as PublicClient | undefined;
  if (factory === null || client === undefined) {
    return { chain, said: 'no deposit addresses (FORWARDER_FACTORY_ADDRESS=off)' };
  }
  if (chain.factoryByDefault) {
    let presence;
    try {
      presence = await factoryPresence(client, factory);
    } catch (error) {
      // Its address holds whatever the chain says: it is computed, not looked up.
      return {
        chain,
        said: `deposit addresses from the ForwarderFactory at ${factory} (its deployment could not be looked up: ${reason(error)})`,
      };
    }
    if (!presence.factoryDeployed && presence.proxyDeployed) {
      return {
        chain,
        said: `deposit addresses from the ForwarderFactory at ${factory}, not deployed on chain ${chain.chainId} yet: deposits are credited all the same, and the first sweep (npm run sweep) deploys it`,
      };
    }
    if (!presence.factoryDeployed) {
      return {
        chain: { ...chain, factory: null },
        said: `no deposit addresses: chain ${chain.chainId} has neither the ForwarderFactory at ${factory} nor the deterministic deployment proxy (${DEPLOYMENT_PROXY}) that would deploy it; deploy the proxy there, or set FORWARDER_FACTORY_ADDRESS to a factory deployed another way`,
      };
    }
  }
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
    throw new Error(
      `FORWARDER_FACTORY_ADDRESS ${factory}: addressOf() could not be called on chain ${chain.chainId} (${reason(error)}). Is it the ForwarderFactory of actors/payments/contracts, deployed on this chain, and is the RPC reachable? Unset it to use the factory at the same address on every chain.`,
    );
  }
  if (getAddress(onChain) !== expected) {
    throw new Error(
      `FORWARDER_FACTORY_ADDRESS ${factory}: its addressOf() gives ${onChain} where this service computes ${expected}: it is not the ForwarderFactory of actors/payments/contracts/artifacts.json. Deposit addresses would be wrong; refusing to start.`,
    );
  }
  return { chain, said: `deposit addresses from the ForwarderFactory at ${factory}` };
}

function reason(error: unknown): string {
  return error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
}
