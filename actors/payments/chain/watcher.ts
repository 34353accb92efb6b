/**
 * The chain watcher: every CHAIN_POLL_MS, in one process at a time, it
 * 1. reads the USDC `Transfer` logs to the addresses of requested payments (their deposit
 *    addresses, and their payee addresses) from the block after its cursor up to the head, in
 *    bounded ranges, and credits each transfer that verifies (./verify.ts: a transfer to a payee
 *    address counts only from the payer's payout address);
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
  findPayoutAddress,
  openPaymentsByAddress,
  paymentsDueToExpire,
  paymentsInFlight,
  readChainCursor,
  writeChainCursor,
  type PaymentRow,
} from '../../../storage/payments.ts';
import type { Services } from '../../kernel/services.ts';
import { applyPaymentEvent } from '../moves.ts';
import {
  agreedBlockHash,
  agreedHead,
  shortReason,
  type AgreedBlockHash,
  type ChainAccess,
} from './clients.ts';
import { creditVerifiedTransfer } from './credit.ts';
import { verifyTransfer } from './verify.ts';

/** Blocks per eth_getLogs call (providers refuse much larger ranges). */
export const BLOCK_RANGE = 2000;
/** Ranges read per tick at most: a long catch-up after downtime goes on next tick. */
const RANGES_PER_TICK = 10;
/** Addresses per eth_getLogs call (one topic OR list). */
const ADDRESS_BATCH = 500;
/** Requested payments watched at once (the oldest-expiring first). */
const WATCHED_LIMIT = 20_000;
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
    await findTransfers(services, chain);
    await followInFlight(services, chain);
  } finally {
    // Free the lease for whoever ticks next, unless it ran out and another took it.
    await claimScheduledJob(db, LEASE_NAME, leaseUntil, new Date(Date.now()));
  }
  return true;
}

/** Step 1: new transfers to the addresses of requested payments, from the cursor on. */
async function findTransfers(services: Services, chain: ChainAccess): Promise<void> {
  const db = services.driver;
  const primary = chain.clients[0] as PublicClient;
  const head = await primary.getBlockNumber();
  const cursor = await readChainCursor(db, chain.chainId);
  // A first run starts after the head: no payment was requested before the watcher ran.
  if (cursor === null) {
    await writeChainCursor(db, chain.chainId, Number(head));
    return;
  }
  let from = BigInt(cursor) + 1n;
  for (let range = 0; range < RANGES_PER_TICK && from <= head; range += 1) {
    const to = from + BigInt(BLOCK_RANGE) - 1n < head ? from + BigInt(BLOCK_RANGE) - 1n : head;
    const addresses = await watchedAddresses(services);
    const stalledAt = await handleRange(services, chain, primary, addresses, from, to);
    const done = stalledAt === null ? to : stalledAt - 1n;
    if (done >= from) await writeChainCursor(db, chain.chainId, Number(done));
    if (stalledAt !== null) return;
    from = to + 1n;
  }
}

/** The deposit and payee addresses of requested payments (lower-case, distinct). */
async function watchedAddresses(services: Services): Promise<Address[]> {
  // Every requested payment, as the expiry read gives them: due at the end of time.
  const requested = await paymentsDueToExpire(services.driver, END_OF_TIME, WATCHED_LIMIT);
  const set = new Set<string>();
  for (const row of requested) {
    set.add(row.payeeAddress.toLowerCase());
    if (row.depositAddress) set.add(row.depositAddress.toLowerCase());
  }
  return [...set] as Address[];
}

/**
 * Credits the transfers of blocks `from`..`to`; the first block holding a transfer that could
 * not be decided (the cursor stops before it), or null when every one was.
 */
async function handleRange(
  services: Services,
  chain: ChainAccess,
  primary: PublicClient,
  addresses: Address[],
  from: bigint,
  to: bigint,
): Promise<bigint | null> {
  const logs = [];
  for (let i = 0; i < addresses.length; i += ADDRESS_BATCH) {
    const batch = addresses.slice(i, i + ADDRESS_BATCH);
    logs.push(
      ...(await primary.getLogs({
        address: chain.usdc,
        event: TRANSFER,
        args: { to: batch },
        fromBlock: from,
        toBlock: to,
        strict: true,
      })),
    );
  }
  logs.sort((a, b) =>
    a.blockNumber === b.blockNumber
      ? (a.logIndex ?? 0) - (b.logIndex ?? 0)
      : a.blockNumber < b.blockNumber
        ? -1
        : 1,
  );
  let stalledAt: bigint | null = null;
  for (const log of logs) {
    if (stalledAt !== null && log.blockNumber >= stalledAt) break;
    // Every open payment to that address, page by page (a payee may be owed many).
    for (let after: string | null = null; ;) {
      const page = await openPaymentsByAddress(services.driver, [log.args.to], after, PAGE);
      for (const payment of page) {
        if (payment.status !== 'requested') continue;
        const decided = await creditIfPaid(services, chain, payment, log.transactionHash);
        if (!decided && (stalledAt === null || log.blockNumber < stalledAt)) {
          stalledAt = log.blockNumber;
        }
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]?.paymentId ?? null;
    }
  }
  return stalledAt;
}

/** Verifies and credits; false when it could not be decided (read again next tick). */
async function creditIfPaid(
  services: Services,
  chain: ChainAccess,
  payment: PaymentRow,
  txHash: string,
): Promise<boolean> {
  const at = services.clock.now();
  const payer = await findPayoutAddress(services.driver, payment.payerAgentId);
  const verified = await verifyTransfer(chain, payment, txHash, {
    payerAddress: payer?.address ?? null,
    reporter: 'watcher',
    at,
  });
  if (verified.kind === 'match') {
    await creditVerifiedTransfer(services, payment.paymentId, chain.chainId, verified.evidence, at);
    return true;
  }
  if (verified.kind === 'no_match') return true;
  const reason = verified.kind === 'pending' ? 'not in a block on every RPC yet' : verified.reason;
  const check = paymentCodec.restore(payment.machine).context.check;
  // Said once per transaction and reason, not once per tick.
  if (check?.tx_hash !== txHash.toLowerCase() || check.reason !== reason) {
    await applyPaymentEvent(services, payment.paymentId, {
      type: 'CHECKED_UNKNOWN',
      tx_hash: txHash.toLowerCase(),
      reason,
      at,
    });
  }
  return false;
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
async function followInFlight(services: Services, chain: ChainAccess): Promise<void> {
  const agreedHeadNow = await agreedHead(chain.clients);
  if ('unknown' in agreedHeadNow) throw new Error(agreedHeadNow.unknown);
  const head = agreedHeadNow.head;
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
