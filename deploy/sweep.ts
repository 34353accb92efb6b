/**
 * `npm run sweep -- <pay_url>`: moves what a payment's deposit address holds to its payee, for
 * anyone with a little gas (the payee, usually). It reads the payment's public pay instructions
 * (`GET /pay/<payment_id>`: token, payee, salt, factory, deposit address, chain), checks that the
 * factory's own addressOf gives that very deposit address, deploys the ForwarderFactory through
 * the deterministic deployment proxy first where the chain has none yet, then calls
 * `sweep(token, payee, salt)`. The money can only go to the payee: the key only pays the gas.
 *
 * `npm run sweep -- --deploy-factory` only deploys the factory (where it is missing).
 *
 * Environment: SWEEP_PRIVATE_KEY (0x and 64 hex digits: any account with gas on the chain),
 * CHAIN_RPC_URL (default: the `rpc_url` the pay instructions suggest).
 */
import { parseArgs } from 'node:util';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  parseAbi,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  DETERMINISTIC_FACTORY,
  deployFactory,
  factoryPresence,
} from '../actors/payments/chain/factory.ts';

const FACTORY_ABI = parseAbi([
  'function addressOf(address token, address payee, bytes32 salt) view returns (address)',
  'function sweep(address token, address payee, bytes32 salt) returns (address)',
]);
const TOKEN_ABI = parseAbi(['function balanceOf(address owner) view returns (uint256)']);

/** The fields of the pay instructions a sweep needs. */
interface PayInstructions {
  chain_id: number;
  token_address: Address;
  payee_address: Address;
  deposit_address: Address | null;
  deposit_salt: Hex | null;
  forwarder_factory: Address | null;
  rpc_url: string | null;
}

class Refusal extends Error {}

async function payInstructions(url: string): Promise<PayInstructions> {
  let answer: Response;
  try {
    answer = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    throw new Refusal(`cannot read ${url}: ${(error as Error).message}`);
  }
  if (!answer.ok) throw new Refusal(`${url} answered ${answer.status}: ${await answer.text()}`);
  return (await answer.json()) as PayInstructions;
}

function signer() {
  const key = process.env.SWEEP_PRIVATE_KEY?.trim();
  if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key)) {
    throw new Refusal(
      'SWEEP_PRIVATE_KEY must be the private key (0x and 64 hex digits) of an account with gas on the chain: it pays the gas only, the money goes to the payee',
    );
  }
  return privateKeyToAccount(key as Hex);
}

async function clients(rpcUrl: string | null | undefined, expectedChainId?: number) {
  if (!rpcUrl) {
    throw new Refusal(
      'CHAIN_RPC_URL must name a JSON-RPC endpoint of the chain (the pay instructions suggest none)',
    );
  }
  const probe = createPublicClient({ transport: http(rpcUrl) });
  const chainId = await probe.getChainId();
  if (expectedChainId !== undefined && chainId !== expectedChainId) {
    throw new Refusal(
      `CHAIN_RPC_URL serves chain ${chainId}, the payment is on ${expectedChainId}`,
    );
  }
  const chain = defineChain({
    id: chainId,
    name: `chain ${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = http(rpcUrl);
  const account = signer();
  return {
    chainId,
    client: createPublicClient({ chain, transport }) as PublicClient,
    wallet: createWalletClient({ account, chain, transport }),
  };
}

async function deployOnly(): Promise<void> {
  const { chainId, client, wallet } = await clients(process.env.CHAIN_RPC_URL);
  const hash = await deployFactory(wallet, client);
  console.log(
    hash
      ? `deployed the ForwarderFactory at ${DETERMINISTIC_FACTORY} on chain ${chainId} (${hash})`
      : `the ForwarderFactory is already at ${DETERMINISTIC_FACTORY} on chain ${chainId}`,
  );
}

async function sweep(payUrl: string): Promise<void> {
  const pay = await payInstructions(payUrl);
  if (!pay.deposit_address || !pay.deposit_salt) {
    throw new Refusal('this payment has no deposit address: there is nothing to sweep');
  }
  if (!pay.forwarder_factory) {
    throw new Refusal(
      'the service names no factory for this deposit address (its factory changed since the payment was requested): ask the payee',
    );
  }
  const factory = getAddress(pay.forwarder_factory);
  const { chainId, client, wallet } = await clients(
    process.env.CHAIN_RPC_URL ?? pay.rpc_url,
    pay.chain_id,
  );
  if (!(await factoryPresence(client, factory)).factoryDeployed) {
    if (factory !== DETERMINISTIC_FACTORY) {
      throw new Refusal(`no ForwarderFactory is deployed at ${factory} on chain ${chainId}`);
    }
    const hash = await deployFactory(wallet, client);
    console.log(`deployed the ForwarderFactory at ${factory} on chain ${chainId} (${hash})`);
  }
  const args = [
    getAddress(pay.token_address),
    getAddress(pay.payee_address),
    pay.deposit_salt,
  ] as const;
  const computed = await client.readContract({
    address: factory,
    abi: FACTORY_ABI,
    functionName: 'addressOf',
    args,
  });
  if (getAddress(computed) !== getAddress(pay.deposit_address)) {
    throw new Refusal(
      `the factory computes ${computed} for this payee and salt, not the deposit address ${pay.deposit_address}: not sweeping`,
    );
  }
  const held = await client.readContract({
    address: args[0],
    abi: TOKEN_ABI,
    functionName: 'balanceOf',
    args: [computed],
  });
  const hash = await wallet.writeContract({
    address: factory,
    abi: FACTORY_ABI,
    functionName: 'sweep',
    args,
  });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Refusal(`the sweep ${hash} reverted`);
  console.log(
    `swept ${held} units (6 decimals) from ${computed} to ${args[1]} on chain ${chainId} (${hash})`,
  );
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { 'deploy-factory': { type: 'boolean' } },
    allowPositionals: true,
  });
  if (values['deploy-factory']) return deployOnly();
  const [payUrl] = positionals;
  if (positionals.length !== 1 || !payUrl || !/^https?:\/\//.test(payUrl)) {
    throw new Refusal(
      'usage: npm run sweep -- <pay_url> (the payment’s pay_url, https://…/pay/<payment_id>), or npm run sweep -- --deploy-factory',
    );
  }
  return sweep(payUrl);
}

main().catch((error: unknown) => {
  console.error(
    `sweep: ${error instanceof Refusal ? error.message : ((error as Error).stack ?? String(error))}`,
  );
  process.exit(1);
});
