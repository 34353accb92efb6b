/**
 * A real local chain for payment tests: anvil (from @foundry-rs/anvil) with Base's chain id,
 * TestUsdc and ForwarderFactory deployed, anvil's funded dev accounts, and the moves a test
 * needs (mint, transfer, sweep, mine, snapshot/revert for reorgs). Anvil mines each transaction
 * as it arrives (automine); `mine(n)` adds empty blocks, to give a transfer its confirmations.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  parseAbi,
  type Abi,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type HttpTransport,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { mnemonicToAccount, type HDAccount } from 'viem/accounts';
import { depositSalt } from '../../actors/payments/chain/deposit-address.ts';
import artifacts from '../../actors/payments/contracts/artifacts.json' with { type: 'json' };
import { onTestsEnd } from './resources.ts';

/** Anvil's well-known development mnemonic: its accounts are funded with 10,000 ether each. */
const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';
const ACCOUNT_COUNT = 10;
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

/** The anvil binary of this platform's @foundry-rs package (the npm wrapper would fork again). */
function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve(`${pkg}/package.json`)), 'bin', 'anvil');
}

/** Starts anvil on a port of its choosing and deploys TestUsdc and ForwarderFactory. */
export async function startAnvil(): Promise<TestChain> {
  const child = spawn(
    anvilBinary(),
    ['--host', '127.0.0.1', '--port', '0', '--chain-id', String(CHAIN_ID)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A test process that dies without running its end-of-run closers still takes anvil along.
  const killOnExit = () => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  onTestsEnd(stop);

  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      // Keep only what is needed to find the port or explain a failure; anvil logs every tx.
      output = (output + chunk.toString()).slice(-4096);
      const found = /Listening on (127\.0\.0\.1:\d+)/.exec(output);
      if (found) resolve(`http://${found[1]}`);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    void exited.then(() => reject(new Error(`anvil exited before listening: ${output}`)));
  });

  const chain = defineChain({
    id: CHAIN_ID,
    name: 'anvil (Base chain id)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  const transport = http(url, { retryCount: 0 });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 20 });
  const anvil = createTestClient({ mode: 'anvil', chain, transport });
  const accounts = Array.from({ length: ACCOUNT_COUNT }, (_, addressIndex) =>
    mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex }),
  );
  const wallet = (account: HDAccount): WalletClient<HttpTransport, Chain, HDAccount> =>
    createWalletClient({ account, chain, transport, pollingInterval: 20 });
  const deployer = accounts[0] as HDAccount;
  const bystander = accounts[ACCOUNT_COUNT - 1] as HDAccount;

  const mined = async (hash: Hash): Promise<MinedTx> => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
    return { hash, blockNumber: receipt.blockNumber };
  };
  const deploy = async (artifact: { abi: unknown; bytecode: string }, args: unknown[] = []) => {
    const hash = await wallet(deployer).deployContract({
      abi: artifact.abi as Abi,
      bytecode: artifact.bytecode as Hex,
      args,
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (!receipt.contractAddress) throw new Error('deployment made no contract');
    return getAddress(receipt.contractAddress);
  };

  try {
    const usdc = await deploy(artifacts.TestUsdc);
    const factory = await deploy(artifacts.ForwarderFactory);
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
