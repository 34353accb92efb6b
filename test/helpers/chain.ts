/**
 * A real local chain for payment tests: anvil (from @foundry-rs/anvil) with Base's chain id,
 * TestUsdc and the ForwarderFactory deployed (the factory through the deterministic deployment
 * proxy, so at DETERMINISTIC_FACTORY as on every chain), anvil's funded dev accounts, and the
 * moves a test needs (mint, transfer, sweep, mine, snapshot/revert for reorgs). Anvil mines each
 * transaction as it arrives (automine); `mine(n)` adds empty blocks, to give a transfer its
 * confirmations.
 */
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  http,
  parseAbi,
  toHex,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type HttpTransport,
  type PublicClient,
  type WalletClient,
} from 'viem';
import type { HDAccount } from 'viem/accounts';
import { depositSalt } from '../../actors/payments/chain/deposit-address.ts';
import {
  ANVIL_ACCOUNT_COUNT,
  anvilChain,
  deployTestContracts,
  devAccount,
  launchAnvil,
} from '../../deploy/local-chain.ts';
import { onTestsEnd } from './resources.ts';

const CHAIN_ID = 8453;

const USDC_ABI = parseAbi([
  'function mint(address to, uint256 value)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function balanceOf(address owner) view returns (uint256)',
]);
const FACTORY_ABI = parseAbi([
  'function addressOf(address token, address payee, bytes32 salt) view returns (address)',
  'function sweep(address token, address payee, bytes32 salt) returns (address)',
]);

/** A mined transaction. */
export interface MinedTx {
  hash: Hash;
  blockNumber: bigint;
}

/** What a deposit address is made of, but for the factory (the test chain's own). */
export interface TestDeposit {
  token: Address;
  payee: Address;
  paymentId: string;
}

export interface TestChain {
  /** The JSON-RPC URL (http://127.0.0.1:<port>). */
  url: string;
  chainId: number;
  publicClient: PublicClient<HttpTransport, Chain>;
  /** Anvil's dev accounts (index 0 deployed the contracts), each holding 10,000 ether. */
  accounts: HDAccount[];
  /** A wallet client signing as `account` (locally, as a wallet app would). */
  wallet(account: HDAccount): WalletClient<HttpTransport, Chain, HDAccount>;
  /** TestUsdc (6 decimals, anyone may mint). */
  usdc: Address;
  /** The ForwarderFactory: DETERMINISTIC_FACTORY (actors/payments/chain/factory.ts). */
  factory: Address;
  /** Mints `units` micro-USDC (6 decimals) to `to`. */
  mint(to: Address, units: bigint): Promise<MinedTx>;
  /** An ordinary USDC transfer signed by `from`, as a wallet would send it. */
  transfer(from: HDAccount, to: Address, units: bigint): Promise<MinedTx>;
  /** factory.sweep for a deposit, sent by `by` (default: the last dev account, nobody's). */
  sweep(deposit: TestDeposit, by?: HDAccount): Promise<MinedTx>;
  /** Mines `blocks` empty blocks. */
  mine(blocks?: number): Promise<void>;
  /** The chain's state now; `revert(id)` returns to it (and forgets this and later snapshots). */
  snapshot(): Promise<Hex>;
  /** Drops every block since the snapshot: a reorg, once new blocks are mined in their place. */
  revert(id: Hex): Promise<void>;
  /** The USDC balance of `owner`, in micro-USDC. */
  balanceOf(owner: Address): Promise<bigint>;
  /** Ends anvil (also done at the end of the run). */
  stop(): Promise<void>;
}

/** Starts anvil on a port of its choosing and deploys TestUsdc and ForwarderFactory. */
export async function startAnvil(): Promise<TestChain> {
  // Automine (no block time): a test decides when blocks come.
  const anvilProcess = await launchAnvil({ port: 0, chainId: CHAIN_ID });
  // A test process that dies without running its end-of-run closers still takes anvil along.
  const killOnExit = () => anvilProcess.kill();
  process.once('exit', killOnExit);
  const stop = async () => {
    process.off('exit', killOnExit);
    await anvilProcess.stop();
  };
  onTestsEnd(stop);

  const { url } = anvilProcess;
  const chain = anvilChain(url, CHAIN_ID);
  const transport = http(url, { retryCount: 0 });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 20 });
  const anvil = createTestClient({ mode: 'anvil', chain, transport });
  const accounts = Array.from({ length: ANVIL_ACCOUNT_COUNT }, (_, index) => devAccount(index));
  const wallet = (account: HDAccount): WalletClient<HttpTransport, Chain, HDAccount> =>
    createWalletClient({ account, chain, transport, pollingInterval: 20 });
  const deployer = accounts[0] as HDAccount;
  const bystander = accounts[ANVIL_ACCOUNT_COUNT - 1] as HDAccount;

  const mined = async (hash: Hash): Promise<MinedTx> => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
    return { hash, blockNumber: receipt.blockNumber };
  };
  try {
    // The factory at its deterministic address, through the proxy, as on every chain.
    const { usdc, factory } = await deployTestContracts(wallet(deployer), publicClient);
    return {
      url,
      chainId: CHAIN_ID,
      publicClient,
      accounts,
      wallet,
      usdc,
      factory,
      mint: async (to, units) =>
        mined(
          await wallet(deployer).writeContract({
            address: usdc,
            abi: USDC_ABI,
            functionName: 'mint',
            args: [to, units],
          }),
        ),
      transfer: async (from, to, units) =>
        mined(
          await wallet(from).writeContract({
            address: usdc,
            abi: USDC_ABI,
            functionName: 'transfer',
            args: [to, units],
          }),
        ),
      sweep: async ({ token, payee, paymentId }, by = bystander) =>
        mined(
          await wallet(by).writeContract({
            address: factory,
            abi: FACTORY_ABI,
            functionName: 'sweep',
            args: [token, payee, depositSalt(paymentId)],
          }),
        ),
      mine: (blocks = 1) => anvil.mine({ blocks }),
      snapshot: () => anvil.snapshot(),
      revert: async (id) => {
        // viem's revert drops evm_revert's answer: a snapshot id anvil no longer knows would
        // pass unnoticed, so ask directly.
        const reverted: unknown = await anvil.request({ method: 'evm_revert', params: [id] });
        if (reverted !== true) throw new Error(`anvil could not revert to snapshot ${id}`);
      },
      balanceOf: (owner) =>
        publicClient.readContract({
          address: usdc,
          abi: USDC_ABI,
          functionName: 'balanceOf',
          args: [owner],
        }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The 32-byte private key of a dev account, as an agent keeps it in its environment. */
export function privateKeyOf(account: HDAccount): Hex {
  const key = account.getHdKey().privateKey;
  if (!key) throw new Error('a dev account has a private key');
  return toHex(key);
}
