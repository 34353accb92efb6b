/**
 * The payment watcher (actors/payments/chain/watcher.ts) on a local anvil chain with 10,000
 * requested payments awaited and one block holding 1,000 USDC transfers to 1,000 of their
 * deposit addresses: how long until the watcher has seen them all, and until they are all
 * confirmed once CONFIRMATIONS blocks stand (the crediting one included). Beside it, in the same
 * run, the baseline: the very `eth_getLogs` calls the watcher made (same ranges, same filters),
 * sent directly to anvil with viem, one at a time.
 *
 * The service talks to anvil through a counting JSON-RPC proxy in this process, so every RPC
 * call the watcher needs is counted and timed by method (the proxy's own hop is in those times;
 * the baseline goes around it). The payments are a fixture written through storage/payments/payments.ts
 * (insertPayment, in one transaction) on deals written by SQL, not 10,000 HTTP requests; the
 * 1,000 transfers are signed here with explicit nonces and sent with automine off, then mined
 * with one `evm_mine`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import {
  createPublicClient,
  createTestClient,
  encodeFunctionData,
  getAddress,
  http,
  parseAbi,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import { depositAddress, depositSalt } from '../actors/payments/chain/deposit-address.ts';
import { startPaymentWatcher } from '../actors/payments/chain/watcher.ts';
import { dealCodec, newDeal } from '../machines/deal.ts';
import { newPayment, paymentCodec } from '../machines/payment.ts';
import type { Driver } from '../storage/driver.ts';
import { insertPayment } from '../storage/payments/payments.ts';
import { startAnvil, type TestChain } from '../test/helpers/chain.ts';
import { startBenchServer } from './bench-server.ts';
import { type TestServer } from '../test/helpers/server.ts';
import { newWorkspace } from '../test/helpers/workspaces.ts';
import { rebuildReputationCounts } from '../storage/deals/reputation-counts.ts';
import { FINAL_PAYMENTS_SQL } from '../storage/payments/deal-counts.ts';

export const PAYMENTS_AWAITED = 10_000;
export const TRANSFERS_IN_BLOCK = 1_000;
/** The service's default (CONFIRMATIONS). */
const CONFIRMATIONS = 3;
/** Payees (agents with a payout address each); the payments are spread over them, one deal each. */
const PAYEES = 20;
const AMOUNT_UNITS = 12_500_000n;
/** A tick is one watcher pass; far more than it should take, so a stuck watcher ends the section. */
const MAX_TICKS = 200;
const TRANSFER_GAS = 100_000n;

const USDC_ABI = parseAbi(['function transfer(address to, uint256 value) returns (bool)']);

export interface PaymentsFigure {
  driver: string;
  awaited: number;
  transfers: number;
  confirmations: number;
  fixtureSeconds: number;
  /** One watcher pass over 10,000 awaited payments and a block without transfers to them. */
  idleTickMs: number;
  /** From the block mined to every one of the 1,000 payments seen. */
  seeMs: number;
  seeTicks: number;
  /** From the CONFIRMATIONS-th block mined to every one confirmed. */
  confirmMs: number;
  confirmTicks: number;
  /** RPC calls the watcher made while seeing them, by method: count and total ms (through the proxy). */
  seeCalls: Record<string, { count: number; ms: number }>;
  confirmCalls: Record<string, { count: number; ms: number }>;
  /** The same eth_getLogs calls (ranges and filters) sent directly to anvil with viem. */
  rawGetLogs: { count: number; ms: number; logs: number };
}

/** Why this cannot run here, or null: anvil comes with the @foundry-rs/anvil dev dependency. */
export async function paymentsSkipReason(): Promise<string | null> {
  try {
    const { createRequire } = await import('node:module');
    const arch = process.arch === 'x64' ? 'amd64' : process.arch;
    createRequire(import.meta.url).resolve(
      `@foundry-rs/anvil-${process.platform}-${arch}/package.json`,
    );
    return null;
  } catch {
    return 'anvil (@foundry-rs/anvil) is not installed for this platform';
  }
}

interface RpcCall {
  method: string;
  params: unknown;
  ms: number;
}

/** A JSON-RPC proxy in front of anvil that remembers each call (method, params, time). */
async function countingProxy(target: string): Promise<{
  url: string;
  take(): RpcCall[];
  close(): Promise<void>;
}> {
  let calls: RpcCall[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const started = performance.now();
      void fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (answer) => {
          const text = await answer.text();
          const ms = performance.now() - started;
          const parsed = JSON.parse(body) as unknown;
          const each = (Array.isArray(parsed) ? parsed : [parsed]) as {
            method: string;
            params: unknown;
          }[];
          for (const call of each) {
            calls.push({ method: call.method, params: call.params, ms: ms / each.length });
          }
          response.writeHead(answer.status, { 'content-type': 'application/json' });
          response.end(text);
        })
        .catch((error: unknown) => {
          response.writeHead(502);
          response.end(String(error));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    take: () => {
      const taken = calls;
      calls = [];
      return taken;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function byMethod(calls: readonly RpcCall[]): Record<string, { count: number; ms: number }> {
  const out: Record<string, { count: number; ms: number }> = {};
  for (const call of calls) {
    const entry = (out[call.method] ??= { count: 0, ms: 0 });
    entry.count += 1;
    entry.ms += call.ms;
  }
  return out;
}

/** An agreed deal's machine between `parties`, as the service would have persisted it. */
function agreedMachine(dealId: string, parties: string[]): unknown {
  let state = newDeal(dealId);
  for (const party of parties) {
    state = dealCodec.step(state, {
      type: 'agree',
      agent: party,
      version: 1,
      sha256: '0'.repeat(64),
      parties,
    });
  }
  return dealCodec.persist(state);
}

const LOAD_DEALS = `with input as (
  select * from jsonb_to_recordset($1::text::jsonb) as r(deal_id uuid, path text, payer uuid,
    payee uuid, machine jsonb)
), made as (
  insert into deals (deal_id, workspace_id, path, status, machine, created_at)
  select deal_id, $2::uuid, path, 'agreed', machine, now() from input
)
insert into deal_parties (deal_id, agent_id, agreed_at)
select deal_id, payer, now() from input union all select deal_id, payee, now() from input`;

interface Fixture {
  /** The deposit addresses of the payments the block pays, in payment order. */
  paid: Address[];
  paidIds: string[];
}

/**
 * PAYEES deals between one payer and a payee each, in one workspace, and PAYMENTS_AWAITED
 * requested payments spread over them, each with its deposit address; the first
 * TRANSFERS_IN_BLOCK (one in ten, over every payee) are the ones the block pays.
 */
async function loadFixture(server: TestServer, chain: TestChain): Promise<Fixture> {
  const services = server.services;
  const access = services.chain;
  if (!access?.factory) throw new Error('the test server has no chain or no forwarder factory');
  const payer = await server.signUp('bench payer');
  const payees = [];
  for (let i = 0; i < PAYEES; i += 1) payees.push(await server.signUp(`bench payee ${i}`));
  const workspaceId = await newWorkspace(server, payer);
  const deals = payees.map((payee, i) => ({
    deal_id: randomUUID(),
    path: `deals/${i}.md`,
    payer: payer.agent_id,
    payee: payee.agent_id,
    payee_address: getAddress(toHex(randomAddressBytes(), { size: 20 })),
  }));
  const driver: Driver = services.driver;
  await driver.query(LOAD_DEALS, [
    JSON.stringify(
      deals.map((d) => ({ ...d, machine: agreedMachine(d.deal_id, [d.payer, d.payee]) })),
    ),
    workspaceId,
  ]);
  // Deals loaded by SQL, not agreed through a command: the kept reputation counts catch up.
  await driver.transaction((tx) => rebuildReputationCounts(tx, FINAL_PAYMENTS_SQL));
  const now = Date.now();
  const expiresAt = now + 7 * 24 * 3_600_000;
  const paid: Address[] = [];
  const paidIds: string[] = [];
  const every = PAYMENTS_AWAITED / TRANSFERS_IN_BLOCK;
  await driver.transaction(async (tx) => {
    for (let i = 0; i < PAYMENTS_AWAITED; i += 1) {
      const deal = deals[i % PAYEES] as (typeof deals)[number];
      const paymentId = randomUUID();
      const deposit = depositAddress({
        factory: access.factory as Address,
        token: chain.usdc,
        payee: deal.payee_address,
        paymentId,
      });
      const machine = newPayment({
        payment_id: paymentId,
        amount_units: AMOUNT_UNITS.toString(),
        payee_address: deal.payee_address,
        deposit_address: deposit,
        confirmations_required: access.confirmations,
        created_at: now,
        expires_at: expiresAt,
      });
      const inserted = await insertPayment(tx, {
        paymentId,
        dealId: deal.deal_id,
        workspaceId,
        payerAgentId: deal.payer,
        payeeAgentId: deal.payee,
        memo: `invoice ${i}`,
        amountUnits: AMOUNT_UNITS,
        payeeAddress: deal.payee_address,
        depositAddress: deposit,
        depositSalt: depositSalt(paymentId),
        chainId: access.chainId,
        tokenAddress: access.usdc,
        createdAt: new Date(now),
        expiresAt: new Date(expiresAt),
        machine: paymentCodec.persist(machine),
      });
      if (!inserted) throw new Error(`payment ${i} was not inserted`);
      if (i % every === 0) {
        paid.push(deposit);
        paidIds.push(paymentId);
      }
    }
  });
  await driver.query('analyze');
  return { paid, paidIds };
}

function randomAddressBytes(): Uint8Array {
  const bytes = new Uint8Array(20);
  crypto.getRandomValues(bytes);
  return bytes;
}

/**
 * TRANSFERS_IN_BLOCK transfers of AMOUNT_UNITS to `to`, all in one block: signed with explicit
 * nonces while anvil does not mine, then one `evm_mine`. Answers the block number.
 */
async function oneBlockOfTransfers(chain: TestChain, to: readonly Address[]): Promise<bigint> {
  const sender = chain.accounts[1];
  if (!sender) throw new Error('no sender account');
  await chain.mint(sender.address, AMOUNT_UNITS * BigInt(to.length));
  const test = createTestClient({ mode: 'anvil', transport: http(chain.url) });
  // 1,000 fresh recipients take ~52,000 gas each: more than a 30M block holds.
  await test.setBlockGasLimit({ gasLimit: 1_000_000_000n });
  await test.mine({ blocks: 1 });
  const client = chain.publicClient;
  const nonce = await client.getTransactionCount({ address: sender.address, blockTag: 'pending' });
  const block = await client.getBlock();
  const maxFeePerGas = (block.baseFeePerGas ?? 1_000_000_000n) * 4n + 1_000_000_000n;
  await test.setAutomine(false);
  try {
    for (let i = 0; i < to.length; i += 1) {
      const signed = await sender.signTransaction({
        chainId: chain.chainId,
        type: 'eip1559',
        nonce: nonce + i,
        to: chain.usdc,
        data: encodeFunctionData({
          abi: USDC_ABI,
          functionName: 'transfer',
          args: [to[i] as Address, AMOUNT_UNITS],
        }),
        gas: TRANSFER_GAS,
        maxFeePerGas,
        maxPriorityFeePerGas: 1_000_000_000n,
      });
      await client.request({ method: 'eth_sendRawTransaction', params: [signed as Hex] });
    }
    await test.mine({ blocks: 1 });
  } finally {
    await test.setAutomine(true);
  }
  const mined = await client.getBlock({ blockTag: 'latest' });
  if (mined.transactions.length !== to.length) {
    throw new Error(`the block holds ${mined.transactions.length} transactions, not ${to.length}`);
  }
  return mined.number;
}

async function countStatus(driver: Driver, ids: readonly string[], statuses: string[]) {
  const [row] = await driver.query<{ n: number }>(
    `select count(*)::int as n from payments where payment_id = any($1::uuid[]) and status = any($2::text[])`,
    [ids, statuses],
  );
  return row?.n ?? 0;
}

/**
 * The whole section on the test server's driver (PGlite, or PostgreSQL when DATABASE_URL sends
 * test servers there); the figures go to `done` once measured.
 */
export async function measurePayments(
  signal: AbortSignal,
  done: (figure: PaymentsFigure) => void,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<void> {
  const chain = await startAnvil();
  const proxy = await countingProxy(chain.url);
  let server: TestServer | null = null;
  try {
    server = await startBenchServer({
      log: serverLog,
      chainRpcUrls: [proxy.url],
      chainId: chain.chainId,
      usdcAddress: chain.usdc,
      forwarderFactoryAddress: chain.factory,
      confirmations: CONFIRMATIONS,
      // The service runs no watcher of its own (CHAIN_POLL_MS=0): the one timed here is the only
      // one, so no tick of it finds the lease held by another and returns at once.
      chainPollMs: 0,
    });
    const driver = server.services.driver;
    let started = performance.now();
    const fixture = await loadFixture(server, chain);
    const fixtureSeconds = (performance.now() - started) / 1000;
    log(
      `${PAYMENTS_AWAITED.toLocaleString('en-US')} requested payments on ${driver.kind} in ${fixtureSeconds.toFixed(1)} s`,
    );

    const watcher = startPaymentWatcher(server.services, serverLog, { poll: false });
    try {
      await watcher.tick(); // the first pass sets the cursor at the head
      await chain.mine(1);
      proxy.take();
      started = performance.now();
      await watcher.tick();
      const idleTickMs = performance.now() - started;

      const block = await oneBlockOfTransfers(chain, fixture.paid);
      log(`${TRANSFERS_IN_BLOCK} transfers mined in block ${block}`);
      proxy.take();
      const ids = fixture.paidIds;
      let seeTicks = 0;
      started = performance.now();
      while (
        (await countStatus(driver, ids, ['seen', 'confirmed', 'final'])) < ids.length &&
        !signal.aborted
      ) {
        if (++seeTicks > MAX_TICKS) throw new Error(`not all seen after ${MAX_TICKS} ticks`);
        await watcher.tick();
      }
      const seeMs = performance.now() - started;
      const seeRpc = proxy.take();

      // The crediting block counts as one: CONFIRMATIONS - 1 more make CONFIRMATIONS.
      await chain.mine(CONFIRMATIONS - 1);
      proxy.take();
      let confirmTicks = 0;
      started = performance.now();
      while (
        (await countStatus(driver, ids, ['confirmed', 'final'])) < ids.length &&
        !signal.aborted
      ) {
        if (++confirmTicks > MAX_TICKS) {
          throw new Error(`not all confirmed after ${MAX_TICKS} ticks`);
        }
        await watcher.tick();
      }
      const confirmMs = performance.now() - started;
      const confirmRpc = proxy.take();

      // The baseline: the same eth_getLogs calls, directly to anvil, one at a time.
      const direct = createPublicClient({ transport: http(chain.url, { retryCount: 0 }) });
      const getLogs = seeRpc.filter((call) => call.method === 'eth_getLogs');
      let rawMs = 0;
      let rawLogs = 0;
      for (const call of getLogs) {
        const t = performance.now();
        const answer = await direct.request({
          method: 'eth_getLogs',
          params: call.params as never,
        });
        rawMs += performance.now() - t;
        rawLogs += (answer as unknown[]).length;
      }
      done({
        driver: driver.kind,
        awaited: PAYMENTS_AWAITED,
        transfers: TRANSFERS_IN_BLOCK,
        confirmations: CONFIRMATIONS,
        fixtureSeconds,
        idleTickMs,
        seeMs,
        seeTicks,
        confirmMs,
        confirmTicks,
        seeCalls: byMethod(seeRpc),
        confirmCalls: byMethod(confirmRpc),
        rawGetLogs: { count: getLogs.length, ms: rawMs, logs: rawLogs },
      });
    } finally {
      await watcher.stop();
    }
  } finally {
    await server?.close();
    await proxy.close();
    await chain.stop();
  }
}

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const calls = (table: Record<string, { count: number; ms: number }>) =>
  Object.entries(table)
    .sort((a, b) => b[1].count - a[1].count)
    .map(([method, { count, ms }]) => `${method} ${count} (${secs(ms)})`)
    .join(', ') || 'none';

/** The section's lines for the closing report. */
export function paymentsLines(
  figures: readonly PaymentsFigure[],
  skipped: string | null,
): string[] {
  const lines = [
    '',
    `Payment watcher: ${PAYMENTS_AWAITED.toLocaleString('en-US')} requested payments awaited (deposit and payee`,
    `addresses watched), one anvil block holding ${TRANSFERS_IN_BLOCK.toLocaleString('en-US')} USDC transfers to`,
    `${TRANSFERS_IN_BLOCK.toLocaleString('en-US')} of their deposit addresses; the watcher ticked back to back`,
    '(actors/payments/chain/watcher.ts). RPC calls went through a counting proxy (its hop included;',
    "times are summed per method, and the watcher fetches a block's receipts 8 at a time);",
    "the baseline sends the watcher's own eth_getLogs calls (same ranges and filters) directly to anvil.",
  ];
  for (const f of figures) {
    const getLogs = f.seeCalls.eth_getLogs ?? { count: 0, ms: 0 };
    lines.push(
      `- ${f.driver}: fixture written in ${f.fixtureSeconds.toFixed(1)} s; an idle pass over ${f.awaited.toLocaleString('en-US')} awaited: ${secs(f.idleTickMs)}`,
      `- all ${f.transfers} seen: ${secs(f.seeMs)} (${f.seeTicks} passes); all confirmed after ${f.confirmations} blocks: ${secs(f.confirmMs)} more (${f.confirmTicks} passes)`,
      `- eth_getLogs while seeing: ${getLogs.count} calls, ${secs(getLogs.ms)}; raw baseline, the same ${f.rawGetLogs.count} calls directly: ${secs(f.rawGetLogs.ms)} (${f.rawGetLogs.logs} logs)`,
      `- every RPC call while seeing: ${calls(f.seeCalls)}`,
      `- every RPC call while confirming: ${calls(f.confirmCalls)}`,
    );
  }
  if (figures.length === 0) lines.push(skipped ? `skipped: ${skipped}` : '(no figures)');
  return lines;
}

/** The closing ratio: the watcher's time beside the raw eth_getLogs it needed. */
export function paymentsRatios(figures: readonly PaymentsFigure[]): string[] {
  if (figures.length === 0) return ['payment watcher: not measured'];
  return figures.map((f) => {
    const getLogs = f.seeCalls.eth_getLogs ?? { count: 0, ms: 0 };
    return (
      `payment watcher (${f.driver}), ${f.transfers.toLocaleString('en-US')} transfers in one block among ` +
      `${f.awaited.toLocaleString('en-US')} awaited: all seen in ${secs(f.seeMs)}, all confirmed ` +
      `${secs(f.confirmMs)} after ${f.confirmations} confirmations stood; its ${getLogs.count} eth_getLogs took ` +
      `${secs(getLogs.ms)}, the same calls raw ${secs(f.rawGetLogs.ms)}`
    );
  });
}
