/**
 * The chain watcher: every CHAIN_POLL_MS, in one process at a time, it
 * 1. reads the USDC `Transfer` logs to the addresses of requested payments (their deposit
 *    addresses, and their payee addresses) from the block after its cursor up to the head, in
 *    bounded ranges, and credits each transfer that verifies (./verify.ts, by the rules of
 *    ./crediting-rules.ts: a transfer to a payee address counts only from the payer's payout
 *    address, and none in a block at or before the payment's `requestedAtBlock`);
 * 2. follows the payments in flight (seen, confirmed): enough blocks on top with every RPC
 *    agreeing on the block hash -> CONFIRMED; the block at or below the chain's `finalized`
 *    block -> FINAL; every RPC answering another block (or none) at that height -> REORGED, the
 *    credit released and the cursor moved back so the transfer is found again if re-mined;
 * Expiry is the `payments.expire` job's (../expiry.ts).
 * The cursor (chain_cursor) moves only past blocks fully handled, so a restart resumes where it
 * stopped and a transfer that could not be verified (an RPC failing or disagreeing) is read
 * again next tick. Any error ends the tick with a log line, never the process.
 *
 * One process at a time: each tick claims a lease row in `scheduled_jobs` (the scheduler's
 * one-statement claim), so it works alike on PGlite (one process) and PostgreSQL (several).
 */
import { erc20Abi, getAbiItem, type Address, type PublicClient } from 'viem';
import { paymentCodec, type PaymentEvidence } from '../../../machines/payment.ts';
import { claimScheduledJob, ensureScheduledJob } from '../../../storage/kernel/scheduled-jobs.ts';
import {
  openPaymentAddresses,
  openPaymentsByAddress,
  paymentsInFlight,
  type PaymentRow,
} from '../../../storage/payments/payments.ts';
import { findPayoutAddress } from '../../../storage/payments/payout-addresses.ts';
import { readChainCursor, writeChainCursor } from '../../../storage/payments/chain-cursor.ts';
import type { Services } from '../../kernel/services.ts';
import { applyPaymentEvent } from '../moves.ts';
import {
  agreedBlockHash,
  agreedHead,
  shortReason,
  type AgreedBlockHash,
  type AgreedHead,
  type ChainAccess,
} from './clients.ts';
import { creditVerifiedTransfer } from './credit.ts';
import { verifyTransfer, type Verification } from './verify.ts';

/** Blocks per eth_getLogs call (providers refuse much larger ranges). */
export const BLOCK_RANGE = 2000;
/** Ranges read per tick at most: a long catch-up after downtime goes on next tick. */
const RANGES_PER_TICK = 10;
/** Addresses per eth_getLogs call (one topic OR list), read a page at a time. */
const ADDRESS_BATCH = 500;
/** Receipts of one block's matching logs fetched at once (each asks every RPC). */
const RECEIPTS_AT_ONCE = 8;
/** Payments read per page. */
const PAGE = 200;
/** How long one tick may hold the lease before another process may take over. */
const LEASE_MS = 60_000;
const LEASE_NAME = 'payments.chain_watcher';
const END_OF_TIME = new Date('9999-12-31T00:00:00Z');

const TRANSFER = getAbiItem({ abi: erc20Abi, name: 'Transfer' });

export interface PaymentWatcher {
  /** One pass now (tests; the loop calls it every CHAIN_POLL_MS). False: another process holds the lease. */
  tick(): Promise<boolean>;
  /** Ends the loop after the tick under way. */
  stop(): Promise<void>;
}

export interface WatcherOptions {
  /** Start the polling loop (default true); false: only `tick()` runs it (tests). */
  poll?: boolean;
}

/** Starts the watcher of `services.chain` (a watcher that does nothing when there is none). */
export function startPaymentWatcher(
  services: Services,
  log: (message: string) => void,
  options: WatcherOptions = {},
): PaymentWatcher {
  const chain = services.chain;
  if (!chain) return { tick: async () => false, stop: async () => {} };

  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<boolean> | null = null;
  let lastError = '';

  const tick = (): Promise<boolean> => {
    running ??= watchOnce(services, chain)
      .then((ran) => {
        lastError = '';
        return ran;
      })
      .catch((error: unknown) => {
        // One line per new trouble, not one per tick of a provider that stays down.
        const line = shortReason(error);
        if (line !== lastError) log(`payments watcher: ${line} (retried every tick)`);
        lastError = line;
        return false;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const loop = () => {
    timer = null;
    if (stopped) return;
    void tick().then(() => {
      if (!stopped) timer = setTimeout(loop, chain.pollMs);
    });
  };
  if (options.poll !== false) timer = setTimeout(loop, 0);

  return {
    tick,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

/** One pass, under the lease; false when another process holds it. */
async function watchOnce(services: Services, chain: ChainAccess): Promise<boolean> {
  const db = services.driver;
  const started = Date.now();
  const leaseUntil = new Date(started + Math.max(LEASE_MS, chain.pollMs * 10));
  // The row is made free once; an existing lease is left as it is (never brought forward).
  await ensureScheduledJob(db, LEASE_NAME, new Date(0), END_OF_TIME);
  if (!(await claimScheduledJob(db, LEASE_NAME, new Date(started), leaseUntil))) return false;
  try {
    // The head, once per pass: every range, every verified log and the confirmations count
    // from it (a head a few seconds old only counts fewer confirmations).
    const head = await agreedHead(chain.clients);
    await findTransfers(services, chain, head);
    if ('unknown' in head) throw new Error(head.unknown);
    await followInFlight(services, chain, head.head);
  } finally {
    // Free the lease for whoever ticks next, unless it ran out and another took it.
    await claimScheduledJob(db, LEASE_NAME, leaseUntil, new Date(Date.now()));
  }
  return true;
}

/**
 * Step 1: new transfers to the addresses of requested payments, from the cursor up to the
 * head. The head is read before the addresses, so a payment requested after it was read can
 * have no transfer at or below it that the addresses miss.
 */
async function findTransfers(
  services: Services,
  chain: ChainAccess,
  agreed: AgreedHead,
): Promise<void> {
  const db = services.driver;
  const primary = chain.clients[0] as PublicClient;
  // The RPCs disagree or one is down: the logs are still read (on the first RPC, up to its
  // head) so each transfer found is recorded as unknown on its payment, and never credited.
  const head = 'head' in agreed ? agreed.head : await primary.getBlockNumber();
  const cursor = await readChainCursor(db, chain.chainId);
  // A first run starts after the head: no payment was requested before the watcher ran.
  if (cursor === null) {
    await writeChainCursor(db, chain.chainId, Number(head));
    return;
  }
  const pass: Pass = { services, chain, primary, head: agreed, payers: new Map() };
  let from = BigInt(cursor) + 1n;
  for (let range = 0; range < RANGES_PER_TICK && from <= head; range += 1) {
    const to = from + BigInt(BLOCK_RANGE) - 1n < head ? from + BigInt(BLOCK_RANGE) - 1n : head;
    const stalledAt = await handleRange(pass, from, to);
    const done = stalledAt === null ? to : stalledAt - 1n;
    if (done >= from) await writeChainCursor(db, chain.chainId, Number(done));
    if (stalledAt !== null) return;
    from = to + 1n;
  }
}

/** What one pass reads once and shares: the head and the payers' payout addresses. */
interface Pass {
  services: Services;
  chain: ChainAccess;
  primary: PublicClient;
  head: AgreedHead;
  /** Payer agent id -> payout address (null: none), read once per pass. */
  payers: Map<string, string | null>;
}

type TransferLog = {
  blockNumber: bigint;
  logIndex: number;
  transactionHash: string;
  args: { to: Address };
};

/** The USDC transfers of blocks `from`..`to` to watched addresses, in chain order. */
async function transfersIn(pass: Pass, from: bigint, to: bigint): Promise<TransferLog[]> {
  const logs: TransferLog[] = [];
  for (let after: string | null = null; ;) {
    const batch = await openPaymentAddresses(
      pass.services.driver,
      pass.chain.chainId,
      after,
      ADDRESS_BATCH,
    );
    if (batch.length === 0) break;
    const found = await pass.primary.getLogs({
      address: pass.chain.usdc,
      event: TRANSFER,
      args: { to: batch as Address[] },
      fromBlock: from,
      toBlock: to,
      strict: true,
    });
    for (const log of found) {
      logs.push({
        blockNumber: log.blockNumber,
        logIndex: log.logIndex,
        transactionHash: log.transactionHash,
        args: { to: log.args.to },
      });
    }
    if (batch.length < ADDRESS_BATCH) break;
    after = batch[batch.length - 1] ?? null;
  }
  return logs.sort((a, b) =>
    a.blockNumber === b.blockNumber
      ? a.logIndex - b.logIndex
      : a.blockNumber < b.blockNumber
        ? -1
        : 1,
  );
}

/**
 * Credits the transfers of blocks `from`..`to`; the first block holding a transfer that could
 * not be decided (the cursor stops before it), or null when every one was. Block by block, the
 * receipts of a block's transfers are checked a few at once, and then credited one at a time in
 * chain order (log index), stopping at the first undecided: a payment paid twice in one block
 * is credited by its first transfer, as if each had been checked alone.
 */
async function handleRange(pass: Pass, from: bigint, to: bigint): Promise<bigint | null> {
  const logs = await transfersIn(pass, from, to);
  for (let start = 0; start < logs.length;) {
    const block = (logs[start] as TransferLog).blockNumber;
    let end = start;
    while (end < logs.length && (logs[end] as TransferLog).blockNumber === block) end += 1;
    const checks = await checksOf(pass, logs.slice(start, end));
    if (!(await creditInOrder(pass, checks))) return block;
    start = end;
  }
  return null;
}

/** One open payment and one transfer to its address, with what its receipt says. */
interface Check {
  payment: PaymentRow;
  txHash: string;
  verified: Verification;
}

/** Every (requested payment, transfer) pair of one block's logs, verified RECEIPTS_AT_ONCE at a time. */
async function checksOf(pass: Pass, logs: TransferLog[]): Promise<Check[]> {
  const pairs: { payment: PaymentRow; txHash: string }[] = [];
  for (const log of logs) {
    // Every open payment to that address, page by page (a payee may be owed many).
    for (let after: string | null = null; ;) {
      const page = await openPaymentsByAddress(pass.services.driver, [log.args.to], after, PAGE);
      for (const payment of page) {
        if (payment.status === 'requested') pairs.push({ payment, txHash: log.transactionHash });
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]?.paymentId ?? null;
    }
  }
  const at = pass.services.clock.now();
  return mapAtMost(RECEIPTS_AT_ONCE, pairs, async ({ payment, txHash }) => ({
    payment,
    txHash,
    verified: await verifyTransfer(pass.chain, payment, txHash, {
      payerAddress: await payoutAddressOf(pass, payment.payerAgentId),
      reporter: 'watcher',
      at,
      head: pass.head,
    }),
  }));
}

async function payoutAddressOf(pass: Pass, agentId: string): Promise<string | null> {
  if (!pass.payers.has(agentId)) {
    const row = await findPayoutAddress(pass.services.driver, agentId);
    pass.payers.set(agentId, row?.address ?? null);
  }
  return pass.payers.get(agentId) ?? null;
}

/** `work` over `items`, at most `limit` at once, the answers in the order of the items. */
async function mapAtMost<T, R>(
  limit: number,
  items: readonly T[],
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const answers: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      answers[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return answers;
}

/**
 * Credits the checks in order, one transaction per payment; false at the first one that
 * could not be decided (it and those after it are read again next tick).
 */
async function creditInOrder(pass: Pass, checks: Check[]): Promise<boolean> {
  const { services, chain } = pass;
  // A payment credited by an earlier transfer of this block is no longer requested.
  const credited = new Set<string>();
  for (const { payment, txHash, verified } of checks) {
    if (credited.has(payment.paymentId)) continue;
    if (verified.kind === 'match') {
      await creditVerifiedTransfer(
        services,
        payment.paymentId,
        chain.chainId,
        verified.evidence,
        services.clock.now(),
      );
      credited.add(payment.paymentId);
      continue;
    }
    if (verified.kind === 'no_match') continue;
    const reason =
      verified.kind === 'pending' ? 'not in a block on every RPC yet' : verified.reason;
    const check = paymentCodec.restore(payment.machine).context.check;
    // Said once per transaction and reason, not once per tick.
    if (check?.tx_hash !== txHash.toLowerCase() || check.reason !== reason) {
      await applyPaymentEvent(services, payment.paymentId, {
        type: 'CHECKED_UNKNOWN',
        tx_hash: txHash.toLowerCase(),
        reason,
        at: services.clock.now(),
      });
    }
    return false;
  }
  return true;
}

/** The highest block every RPC calls finalized; CONFIRMATIONS*2 below the head where one has no such tag. */
async function finalizedBlock(chain: ChainAccess, head: bigint): Promise<bigint> {
  const fallback = head - BigInt(chain.confirmations * 2) + 1n;
  const answers = await Promise.all(
    chain.clients.map((client) =>
      client.getBlock({ blockTag: 'finalized' }).then(
        (block) => (typeof block.number === 'bigint' ? block.number : fallback),
        () => fallback,
      ),
    ),
  );
  return answers.reduce((low, n) => (n < low ? n : low), head);
}

/**
 * Whether every RPC answered and none has the credited block any more: all give one other
 * hash at its height, or all know no block there (the chain is shorter now). An RPC that fails,
 * or RPCs that disagree, prove nothing: the payment stays as it is.
 */
function dropped(agreed: AgreedBlockHash, evidence: PaymentEvidence): boolean {
  if ('hash' in agreed) return agreed.hash !== evidence.block_hash;
  return agreed.answers !== null && agreed.answers.every((answer) => answer.block_hash === null);
}

/** Step 2: confirmations, finality and reorgs of the payments credited and not yet final. */
async function followInFlight(services: Services, chain: ChainAccess, head: bigint): Promise<void> {
  let finalized: bigint | null = null;
  const blocks = new Map<number, AgreedBlockHash>();
  let after: string | null = null;
  for (;;) {
    const page = await paymentsInFlight(services.driver, after, PAGE);
    if (page.length === 0) return;
    after = page[page.length - 1]?.paymentId ?? null;
    for (const payment of page) {
      const evidence = paymentCodec.restore(payment.machine).context.evidence;
      if (!evidence) continue;
      let agreed = blocks.get(evidence.block_number);
      if (!agreed) {
        agreed = await agreedBlockHash(chain.clients, BigInt(evidence.block_number));
        blocks.set(evidence.block_number, agreed);
      }
      if ('hash' in agreed && agreed.hash === evidence.block_hash) {
        finalized ??= await finalizedBlock(chain, head);
        await advance(services, payment, evidence, agreed, head, finalized);
      } else if (dropped(agreed, evidence)) {
        await reorged(services, chain, payment, evidence);
      }
      // Otherwise an RPC failed or they disagree: nothing moves; the next tick asks again.
    }
  }
}

async function advance(
  services: Services,
  payment: PaymentRow,
  evidence: PaymentEvidence,
  agreed: Extract<AgreedBlockHash, { hash: string }>,
  head: bigint,
  finalized: bigint,
): Promise<void> {
  const confirmations = Number(head - BigInt(evidence.block_number) + 1n);
  const at = services.clock.now();
  if (payment.status === 'seen') {
    const move = await applyPaymentEvent(services, payment.paymentId, {
      type: 'CONFIRMED',
      confirmations,
      block_hash: agreed.hash,
      rpc_answers: agreed.answers,
      at,
    });
    if (move?.status !== 'confirmed') return;
  }
  if (BigInt(evidence.block_number) <= finalized) {
    await applyPaymentEvent(services, payment.paymentId, { type: 'FINAL', at });
  }
}

async function reorged(
  services: Services,
  chain: ChainAccess,
  payment: PaymentRow,
  evidence: PaymentEvidence,
): Promise<void> {
  const move = await applyPaymentEvent(services, payment.paymentId, {
    type: 'REORGED',
    at: services.clock.now(),
    reason: `reorg: block ${evidence.block_number} is no longer ${evidence.block_hash} on any RPC`,
  });
  if (!move?.changed) return;
  // The transfer may be mined again at or after its old height: read from there again.
  const cursor = await readChainCursor(services.driver, chain.chainId);
  if (cursor !== null && cursor >= evidence.block_number) {
    await writeChainCursor(services.driver, chain.chainId, evidence.block_number - 1);
  }
}
