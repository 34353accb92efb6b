/**
 * `npm run chain`: a local chain to take payments on, in one command. It starts anvil (from the
 * @foundry-rs/anvil dev dependency) mining a block every second, deploys the test USDC
 * (TestUsdc: 6 decimals, USDC's EIP-712 domain, EIP-3009) and the ForwarderFactory at its
 * deterministic address (through the deployment proxy anvil has), gives a few dev accounts test
 * USDC, and prints the environment lines to give `npm start`. It runs until Ctrl-C or SIGTERM,
 * then stops anvil and exits 0.
 *
 * ANVIL_PORT (default 8545; 0: any free port) and CHAIN_ID (default 8453, Base's) change it.
 * `startLocalChain` is the same without the printing, for tests.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { SettingRow } from '../actors/kernel/settings.ts';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  formatUnits,
  getAddress,
  http,
  parseAbi,
  toHex,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import { mnemonicToAccount, type HDAccount } from 'viem/accounts';
import artifacts from '../actors/payments/contracts/artifacts.json' with { type: 'json' };
import {
  DEPLOYMENT_PROXY,
  DETERMINISTIC_FACTORY,
  deployFactory,
} from '../actors/payments/chain/factory.ts';

/** Anvil's well-known development mnemonic: public, so its keys guard nothing. */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';
/** How many dev accounts anvil makes from it (its default), each with 10,000 ether. */
export const ANVIL_ACCOUNT_COUNT = 10;
/**
 * How far below its head anvil puts the `finalized` block: two epochs of 32 slots (anvil's
 * --slots-in-an-epoch default). Measured on anvil 1.7.1: head 102 -> finalized 38.
 */
export const ANVIL_FINALITY_DEPTH = 64;

const DEFAULT_PORT = 8545;
const DEFAULT_CHAIN_ID = 8453;
/** Accounts 1..4 get test USDC; 0 deploys; the rest keep only ether. */
const FUNDED_ACCOUNTS = [1, 2, 3, 4];
/** 1,000 test USDC each (6 decimals). */
const FUNDS_UNITS = 1_000_000_000n;
/** The service's own default CONFIRMATIONS (server/config.ts). */
const CONFIRMATIONS = 3;

const USDC_ABI = parseAbi(['function mint(address to, uint256 value)']);

/** The anvil binary of this platform's @foundry-rs package (the npm wrapper would fork again). */
export function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve(`${pkg}/package.json`)), 'bin', 'anvil');
}

export interface AnvilOptions {
  port: number;
  chainId: number;
  /** Seconds between mined blocks; unset: a block for each transaction only (automine). */
  blockTime?: number;
}

/** A running anvil. */
export interface AnvilProcess {
  /** The JSON-RPC URL (http://127.0.0.1:<port>). */
  url: string;
  pid: number;
  /** Resolves when anvil has exited, whoever ended it. */
  exited: Promise<void>;
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
  /** SIGKILL at once: for a process on its way out, which cannot wait. */
  kill(): void;
}

/**
 * Starts anvil on 127.0.0.1 and waits until it listens. A port in use is said in one line with
 * its fix, as the service says its own (server/listen-error.ts).
 */
export async function launchAnvil(options: AnvilOptions): Promise<AnvilProcess> {
  const args = ['--host', '127.0.0.1', '--port', String(options.port)];
  args.push('--chain-id', String(options.chainId));
  if (options.blockTime !== undefined) args.push('--block-time', String(options.blockTime));
  // Its own process group: a Ctrl-C in the terminal reaches only us, and we stop anvil, in order.
  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;

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
    child.once('error', reject);
    void exited.then(() => reject(new Error(whyNotListening(options.port, output))));
  });
  return {
    url,
    pid: child.pid as number,
    exited,
    stop: async () => {
      if (running()) child.kill('SIGTERM');
      await exited;
    },
    kill: () => {
      if (running()) child.kill('SIGKILL');
    },
  };
}

function whyNotListening(port: number, output: string): string {
  if (/address already in use/i.test(output)) {
    return `cannot start: anvil cannot listen on 127.0.0.1:${port} (ANVIL_PORT): the port is already in use (EADDRINUSE); set ANVIL_PORT to a free port (ANVIL_PORT=0 for any free port)`;
  }
  return `cannot start: anvil exited before listening: ${output.trim() || 'no output'}`;
}

/** The chain viem is told about: anvil at `url` with `chainId`. */
export function anvilChain(url: string, chainId: number): Chain {
  return defineChain({
    id: chainId,
    name: `anvil (chain id ${chainId})`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
}

/** Anvil's dev account `index` of ANVIL_MNEMONIC. */
export const devAccount = (index: number): HDAccount =>
  mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });

/** The private key of a dev account (public knowledge: anvil's documentation lists them). */
export function devPrivateKey(account: HDAccount): Hex {
  const key = account.getHdKey().privateKey;
  if (!key) throw new Error(`no private key for ${account.address}`);
  return toHex(key);
}

/**
 * Deploys TestUsdc (a plain deployment by `wallet`) and the ForwarderFactory through the
 * deterministic deployment proxy, so it is at DETERMINISTIC_FACTORY as on every chain.
 */
export async function deployTestContracts(
  wallet: WalletClient<Transport, Chain, Account>,
  client: PublicClient,
): Promise<{ usdc: Address; factory: Address }> {
  const hash = await wallet.deployContract({
    abi: artifacts.TestUsdc.abi as Abi,
    bytecode: artifacts.TestUsdc.bytecode as Hex,
  });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success' || !receipt.contractAddress) {
    throw new Error(`the deployment of TestUsdc (${hash}) made no contract`);
  }
  await deployFactory(wallet, client);
  return { usdc: getAddress(receipt.contractAddress), factory: DETERMINISTIC_FACTORY };
}

export interface LocalChainOptions {
  /** Default 8545; 0: any free port. */
  port?: number;
  /** Default 8453 (Base's). */
  chainId?: number;
  /** Seconds between blocks; default 1. */
  blockTime?: number;
}

/** A dev account given test USDC. */
export interface FundedAccount {
  index: number;
  address: Address;
  privateKey: Hex;
  /** Its test USDC, in micro-USDC. */
  units: bigint;
}

export interface LocalChain {
  anvil: AnvilProcess;
  url: string;
  chainId: number;
  blockTime: number;
  usdc: Address;
  factory: Address;
  /** Account 0, which deployed the contracts. */
  deployer: Address;
  funded: FundedAccount[];
  /** What `npm start` needs to take payments on this chain, by variable name. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Starts anvil, deploys the contracts and funds dev accounts 1..4; anvil stops if any step fails. */
export async function startLocalChain(options: LocalChainOptions = {}): Promise<LocalChain> {
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  const blockTime = options.blockTime ?? 1;
  // Automine while setting up (each transaction mined at once, not a second later), then a
  // block every `blockTime` seconds, transactions or not, as on a real chain.
  const anvil = await launchAnvil({ port: options.port ?? DEFAULT_PORT, chainId });
  try {
    const chain = anvilChain(anvil.url, chainId);
    const transport = http(anvil.url, { retryCount: 0 });
    const client = createPublicClient({ chain, transport, pollingInterval: 100 });
    const deployer = devAccount(0);
    const wallet = createWalletClient({ account: deployer, chain, transport });
    const { usdc, factory } = await deployTestContracts(wallet, client);

    const funded: FundedAccount[] = [];
    for (const index of FUNDED_ACCOUNTS) {
      const account = devAccount(index);
      const hash = await wallet.writeContract({
        address: usdc,
        abi: USDC_ABI,
        functionName: 'mint',
        args: [account.address, FUNDS_UNITS],
      });
      const receipt = await client.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success') throw new Error(`minting to ${account.address} reverted`);
      funded.push({
        index,
        address: account.address,
        privateKey: devPrivateKey(account),
        units: FUNDS_UNITS,
      });
    }
    await createTestClient({ mode: 'anvil', chain, transport }).setIntervalMining({
      interval: blockTime,
    });
    return {
      anvil,
      url: anvil.url,
      chainId,
      blockTime,
      usdc,
      factory,
      deployer: deployer.address,
      funded,
      env: {
        CHAIN_RPC_URL: anvil.url,
        CHAIN_ID: String(chainId),
        USDC_ADDRESS: usdc,
        CONFIRMATIONS: String(CONFIRMATIONS),
        // The pay page and instructions may point payers at this chain: it holds no key.
        PUBLIC_RPC_URL: anvil.url,
      },
      stop: () => anvil.stop(),
    };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/** What `npm run chain` prints once the chain is ready. */
export function describeLocalChain(chain: LocalChain): string {
  const finalSeconds = ANVIL_FINALITY_DEPTH * chain.blockTime;
  const confirmedSeconds = CONFIRMATIONS * chain.blockTime;
  const lines = Object.entries(chain.env).map(([name, value]) => `${name}=${value}`);
  return [
    '',
    `anvil (pid ${chain.anvil.pid}) runs a local chain at ${chain.url}, chain id ${chain.chainId}, mining a block every ${chain.blockTime} s.`,
    `  test USDC (TestUsdc: "USD Coin", 6 decimals, EIP-712 version "2", EIP-3009; anyone may mint): ${chain.usdc}`,
    `  ForwarderFactory (deterministic address, deployed through the proxy ${DEPLOYMENT_PROXY}): ${chain.factory}`,
    '',
    `Accounts: anvil's dev accounts, from the mnemonic "${ANVIL_MNEMONIC}".`,
    'These are PUBLIC test keys, known to everyone: never send real money to them, on any chain.',
    `  #0 ${chain.deployer} deployed the contracts (10,000 ETH)`,
    ...chain.funded.map(
      (account) =>
        `  #${account.index} ${account.address} key ${account.privateKey} (${usdc(account.units)} test USDC, 10,000 ETH)`,
    ),
    '',
    'Give `npm start` these lines (in its environment, or before it on the command line):',
    '',
    ...lines,
    '',
    `That is: ${lines.join(' ')} npm start`,
    'FORWARDER_FACTORY_ADDRESS is not needed: the service finds the factory at its deterministic address.',
    `How a payment moves here: the service sees its transfer within CHAIN_POLL_MS (2 s by default), calls it confirmed after CONFIRMATIONS=${CONFIRMATIONS} blocks (about ${confirmedSeconds} s), and final once the chain's finalized block reaches the transfer's block.`,
    `Anvil's finalized block is ${ANVIL_FINALITY_DEPTH} blocks below its head, so with a block every ${chain.blockTime} s a payment turns final about ${finalSeconds} s after its transfer (on Base it takes longer: a block is final once Ethereum finalizes the batch that holds it).`,
    'Ctrl-C stops the chain; its state is gone with it.',
    '',
  ].join('\n');
}

/** Micro-USDC as whole test USDC, with thousands separators: 1000000000n -> "1,000". */
function usdc(units: bigint): string {
  return Number(formatUnits(units, 6)).toLocaleString('en-US');
}

/** What `npm run chain` reads from the environment: its rows of README.md's table. */
export const LOCAL_CHAIN_SETTINGS: readonly SettingRow[] = [
  {
    variables: ['ANVIL_PORT'],
    default: '`8545`',
    meaning: "the port of `npm run chain`'s anvil (not the service's); `0`: any free port",
  },
];

function port(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_PORT;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new Error(`ANVIL_PORT takes a port number (0 for any free port), not "${value}"`);
  }
  return n;
}

function chainId(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_CHAIN_ID;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new Error(`CHAIN_ID takes a positive whole number, not "${value}"`);
  }
  return n;
}

async function main(): Promise<void> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  let signalled = false;
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
      process.on(name, () => {
        signalled = true;
        resolve(name);
      });
  });
  let chain: LocalChain;
  try {
    chain = await startLocalChain({
      port: port(process.env.ANVIL_PORT),
      chainId: chainId(process.env.CHAIN_ID),
    });
  } catch (error) {
    say(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
    return;
  }
  // Anvil is in its own process group: whatever ends this process must end anvil too.
  process.once('exit', () => chain.anvil.kill());
  if (!signalled) process.stdout.write(describeLocalChain(chain));
  const ended = await Promise.race([signal, chain.anvil.exited.then(() => null)]);
  if (ended === null) {
    say('anvil exited on its own: the chain is gone.');
    process.exitCode = 1;
    return;
  }
  say(`${ended}: stopping anvil...`);
  await chain.stop();
  say('stopped.');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
