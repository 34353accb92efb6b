import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  erc20Abi,
  http,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { configFromEnv, type Config } from '../../server/config.ts';
import { ANVIL_FINALITY_DEPTH, anvilChain } from '../../deploy/local-chain.ts';
import { callJson } from '../helpers/http.ts';
import {
  agreedPair,
  getPayment,
  proofMessage,
  requestedPayment,
  type PaymentBody,
} from '../helpers/payments-core.ts';
import { alive } from '../helpers/process-alive.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * `npm run chain` as a developer runs it: the script's own process prints the lines to give the
 * service, the real service started with exactly those lines takes a payment paid from one of
 * the printed accounts, and SIGTERM ends the script and anvil with it.
 */
const test = suite('npm run chain: a local chain for payments in one command');

const SCRIPT = join(import.meta.dirname, '../../deploy/local-chain.ts');
/** The last line the script prints once everything is ready. */
const READY = /Ctrl-C stops the chain/;

interface ChainCommand {
  pid: number;
  /** Resolves with all it printed on stdout once READY appears; rejects if it exits first. */
  ready: Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
  kill(signal: NodeJS.Signals): void;
  /**
   * Ends it whatever state it is in: SIGTERM, then after 10 s SIGKILL to it and to the anvil it
   * printed (anvil runs in its own process group, so nothing else would end it).
   */
  stop(): Promise<void>;
}

/** The script as `npm run chain` runs it (node with tsx as loader: the pid is the script's). */
function runChainCommand(env: Record<string, string>): ChainCommand {
  // Only what the test gives sets the chain's port and id, never the test run's environment.
  const inherited = { ...process.env };
  delete inherited.CHAIN_ID;
  delete inherited.ANVIL_PORT;
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  let stdout = '';
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => {
      child.kill('SIGKILL');
      const anvilPid = Number(/anvil \(pid (\d+)\)/.exec(stdout)?.[1]);
      if (anvilPid) process.kill(anvilPid, 'SIGKILL');
    }, 10_000);
    await exited;
    clearTimeout(killer);
  };
  onTestsEnd(stop);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (READY.test(stdout)) resolve(stdout);
    });
    void exited.then(({ code }) =>
      reject(new Error(`npm run chain exited with ${code} before it was ready: ${stderr}`)),
    );
  });
  // A test that looks at the exit only must not see an unhandled rejection.
  ready.catch(() => undefined);
  return {
    pid: child.pid as number,
    ready,
    exited,
    stderr: () => stderr,
    kill: (signal) => void child.kill(signal),
    stop,
  };
}

/** The `NAME=value` lines of the printed text. */
function envLines(printed: string): Record<string, string> {
  return Object.fromEntries(
    [...printed.matchAll(/^([A-Z][A-Z0-9_]*)=(\S+)$/gm)].map((m) => [m[1], m[2]] as const),
  );
}

/** The printed funded accounts: `#<n> <address> key <private key>`. */
function printedKeys(printed: string): Hex[] {
  return [...printed.matchAll(/#\d+ 0x[0-9a-fA-F]{40} key (0x[0-9a-f]{64})/g)].map(
    (m) => m[1] as Hex,
  );
}

/**
 * The service's settings from exactly `env`: every setting the lines change from the defaults,
 * read by the service's own parser (server/config.ts), on top of the test server's.
 */
function settingsFrom(env: Record<string, string>): Partial<Config> {
  const defaults = configFromEnv({}) as unknown as Record<string, unknown>;
  const given = configFromEnv(env) as unknown as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(given).filter(
      ([key, value]) => typeof value !== 'function' && !isDeepStrictEqual(value, defaults[key]),
    ),
  ) as Partial<Config>;
}

/** set_payout_address for `agent`, proved with the printed key. */
async function provePayout(server: TestServer, agent: Agent, key: Hex) {
  const account = privateKeyToAccount(key);
  const proved = await callJson(server, 'PUT', '/whoami/payout-address', agent.api_token, {
    address: account.address,
    signature: await account.signMessage({
      message: proofMessage(account.address, agent.agent_id),
    }),
  });
  assert.is(proved.status, 200, JSON.stringify(proved.body));
}

const ORDER = ['requested', 'seen', 'confirmed', 'final'];

/** Waits, change by change (the long-poll answers at once when one is there), for `target`. */
async function waitFor(server: TestServer, payee: Agent, paymentId: string, target: string) {
  for (let round = 0; round < 60; round++) {
    const shown = await getPayment(server, payee, paymentId);
    assert.is(shown.status, 200, JSON.stringify(shown.body));
    if (shown.body.status === 'expired') assert.unreachable('the payment expired');
    if (ORDER.indexOf(shown.body.status) >= ORDER.indexOf(target)) return shown.body;
    await callJson(server, 'GET', '/changes/wait?timeout=5', payee.api_token);
  }
  throw new Error(`payment ${paymentId} did not reach ${target}`);
}

/** The command's exit, or a failure when it is still running after `ms` (it must not hang). */
async function exitWithin(command: ChainCommand, ms: number) {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Error(`npm run chain still runs ${ms} ms after SIGTERM: ${command.stderr()}`)),
      ms,
    );
  });
  try {
    return await Promise.race([command.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Everything the first test checks, while the command runs. */
async function paidOnTheChainOf(command: ChainCommand) {
  const printed = await command.ready;

  const env = envLines(printed);
  assert.equal(Object.keys(env).sort(), [
    'CHAIN_ID',
    'CHAIN_RPC_URL',
    'CONFIRMATIONS',
    'PUBLIC_RPC_URL',
    'USDC_ADDRESS',
  ]);
  assert.is(env.CHAIN_ID, '8453');
  const rpcUrl = env.CHAIN_RPC_URL as string;
  const anvilPid = Number(/anvil \(pid (\d+)\)/.exec(printed)?.[1]);
  assert.ok(alive(anvilPid), 'the printed anvil runs');
  // The keys are said to be public, and what `final` takes here is said.
  assert.match(printed, /PUBLIC test keys/);
  assert.match(printed, /final once the chain's finalized block reaches the transfer's block/);
  assert.match(printed, /Anvil's finalized block is 64 blocks below its head/);
  assert.match(printed, /a payment turns final about 64 s after its transfer/);
  const [payerKey, payeeKey] = printedKeys(printed);
  assert.ok(payerKey && payeeKey, 'funded accounts are printed with their keys');

  const server = await startTestServer(settingsFrom(env));
  onTestsEnd(() => server.close());
  const { payee, payer, dealId } = await agreedPair(server);
  await provePayout(server, payee, payeeKey);
  await provePayout(server, payer, payerKey);
  const payment: PaymentBody = await requestedPayment(
    server,
    { payee, payer, dealId },
    '12.5',
    `local chain ${randomUUID()}`,
  );
  assert.is(payment.chain_id, 8453);
  assert.is(payment.token_address.toLowerCase(), (env.USDC_ADDRESS as string).toLowerCase());
  // No FORWARDER_FACTORY_ADDRESS given: the deposit address is the deterministic factory's.
  assert.ok(payment.deposit_address, 'the payment has a deposit address');
  assert.is(payment.pay_to, payment.deposit_address);

  const chain = anvilChain(rpcUrl, Number(env.CHAIN_ID));
  const wallet = createWalletClient({
    account: privateKeyToAccount(payerKey),
    chain,
    transport: http(rpcUrl),
  });
  const client = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 100 });
  const hash = await wallet.writeContract({
    address: payment.token_address as Address,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [payment.pay_to as Address, BigInt(payment.amount_units)],
  });
  assert.is((await client.waitForTransactionReceipt({ hash })).status, 'success');

  // Blocks come by themselves, a block a second: nobody mines here.
  const confirmed = await waitFor(server, payee, payment.payment_id, 'confirmed');
  assert.is(confirmed.tx_hash, hash);

  // What the printed text says of `final` is what the chain does: rather than wait the minute,
  // mine the 64 blocks at once; anvil's finalized block is then 64 below the head, and the
  // payment's block is at or below it, so the service makes it final.
  await createTestClient({ mode: 'anvil', chain, transport: http(rpcUrl) }).mine({
    blocks: ANVIL_FINALITY_DEPTH,
  });
  // Blocks keep coming meanwhile: the finalized block is 64 below a head read around it.
  const depth = BigInt(ANVIL_FINALITY_DEPTH);
  const headBefore = await client.getBlockNumber({ cacheTime: 0 });
  const finalized = (await client.getBlock({ blockTag: 'finalized' })).number;
  const headAfter = await client.getBlockNumber({ cacheTime: 0 });
  assert.ok(
    headBefore - depth <= finalized && finalized <= headAfter - depth,
    `finalized ${finalized} is 64 below the head (${headBefore}..${headAfter})`,
  );
  assert.is((await waitFor(server, payee, payment.payment_id, 'final')).status, 'final');

  command.kill('SIGTERM');
  assert.equal(await exitWithin(command, 20_000), { code: 0, signal: null }, command.stderr());
  assert.match(command.stderr(), /SIGTERM: stopping anvil/);
  assert.not.ok(alive(anvilPid), 'anvil is gone');
  try {
    await client.getBlockNumber();
    assert.unreachable('the chain still answers');
  } catch (error) {
    assert.match(String(error), /fetch failed|ECONNREFUSED|HTTP request failed/);
  }
}

test('its printed lines start the service on the chain; a payment from a printed account is confirmed as blocks come, and final 64 blocks on, as printed; SIGTERM ends it and anvil with exit 0', async () => {
  const command = runChainCommand({ ANVIL_PORT: '0' });
  try {
    await paidOnTheChainOf(command);
  } finally {
    // A failure above must not leave a chain mining for the rest of the run.
    await command.stop();
  }
});

test('a taken ANVIL_PORT is said in one line with its fix, and it exits 1', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as AddressInfo;
  try {
    const command = runChainCommand({ ANVIL_PORT: String(port) });
    assert.equal(await command.exited, { code: 1, signal: null });
    assert.equal(command.stderr().trim().split('\n'), [
      `cannot start: anvil cannot listen on 127.0.0.1:${port} (ANVIL_PORT): the port is already in use (EADDRINUSE); set ANVIL_PORT to a free port (ANVIL_PORT=0 for any free port)`,
    ]);
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
});

test('an ANVIL_PORT that is no port number is refused in one line before anything starts', async () => {
  const command = runChainCommand({ ANVIL_PORT: 'eighty' });
  assert.equal(await command.exited, { code: 1, signal: null });
  assert.equal(command.stderr().trim().split('\n'), [
    'ANVIL_PORT takes a port number (0 for any free port), not "eighty"',
  ]);
});

test.run();
