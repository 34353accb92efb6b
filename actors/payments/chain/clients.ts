/**
 * The service's view of the chain: one viem PublicClient per configured RPC (CHAIN_RPC_URL or
 * CHAIN_RPC_URLS), each with a short timeout and at most one retry, so a silent or slow provider
 * costs one tick of the watcher, never a hung request. Nothing here is believed from one RPC
 * alone: `agreedBlockHash` is an answer only when every RPC gives the same block hash, and
 * anything else (an error, a timeout, a missing block, a disagreement) is "unknown".
 */
import {
  createPublicClient,
  defineChain,
  getAddress,
  http,
  type Address,
  type PublicClient,
} from 'viem';
import { boundedFetch } from '../../kernel/outgoing-request.ts';
import { DETERMINISTIC_FACTORY } from './factory.ts';

/** How long one RPC call may take before it counts as no answer (CHAIN_RPC_TIMEOUT_MS's default). */
export const RPC_TIMEOUT_MS = 5000;
/** Retries of a failed RPC call inside one check (viem's own; the next tick retries anyway). */
export const RPC_RETRIES = 1;
/**
 * The most bytes of one JSON-RPC answer read (actors/kernel/outgoing-request.ts): a receipt
 * with a few hundred logs or a block header is far below it; a provider that streams for ever
 * is cut there, within the call's time limit.
 */
export const RPC_ANSWER_BYTES = 1024 * 1024;

/** What the service's start-up contract says about the chain (server/config.ts). */
export interface ChainSettings {
  /** At least one; every one must agree on a block hash before a payment is confirmed. */
  rpcUrls: readonly string[];
  chainId: number;
  /** The USDC contract: the only token whose transfers are credited. */
  usdc: string;
  /** Blocks, the crediting one included, before a payment is confirmed. */
  confirmations: number;
  pollMs: number;
  expiryMs: number;
  /**
   * The ForwarderFactory: undefined for the one at the same address on every chain
   * (factory.ts, DETERMINISTIC_FACTORY), null for none (payments have no deposit address).
   */
  factory?: string | null;
  /** Per RPC call (CHAIN_RPC_TIMEOUT_MS); RPC_TIMEOUT_MS when unset. */
  rpcTimeoutMs?: number;
  /** PUBLIC_RPC_URL: the RPC the pay instructions suggest to payers; never one of `rpcUrls`' keys. */
  publicRpcUrl?: string | null;
  /** X402_FACILITATOR_URL: the x402 facilitator signed payments are handed to; null: none. */
  facilitatorUrl?: string | null;
}

/** `services.chain`: the settings, checked, and the clients (in the order of the URLs). */
export interface ChainAccess {
  chainId: number;
  usdc: Address;
  confirmations: number;
  pollMs: number;
  expiryMs: number;
  factory: Address | null;
  /** Whether `factory` is the deterministic one by default (not FORWARDER_FACTORY_ADDRESS). */
  factoryByDefault: boolean;
  /** Shown to payers as `rpc_url` (null: none suggested). */
  publicRpcUrl: string | null;
  /** The x402 facilitator signed payments go to (its base URL); null: the payee submits them. */
  facilitatorUrl: string | null;
  clients: PublicClient[];
}

/** The clients of the configured RPCs, or null when none is configured (verification is off). */
export function chainAccess(settings: ChainSettings): ChainAccess | null {
  if (settings.rpcUrls.length === 0) return null;
  const chain = defineChain({
    id: settings.chainId,
    name: `chain ${settings.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [...settings.rpcUrls] } },
  });
  const timeout = settings.rpcTimeoutMs ?? RPC_TIMEOUT_MS;
  return {
    chainId: settings.chainId,
    usdc: getAddress(settings.usdc),
    confirmations: settings.confirmations,
    pollMs: settings.pollMs,
    expiryMs: settings.expiryMs,
    factory:
      settings.factory === undefined
        ? DETERMINISTIC_FACTORY
        : settings.factory === null
          ? null
          : getAddress(settings.factory),
    factoryByDefault: settings.factory === undefined,
    publicRpcUrl: settings.publicRpcUrl ?? null,
    facilitatorUrl: settings.facilitatorUrl?.replace(/\/+$/, '') ?? null,
    clients: settings.rpcUrls.map(
      (url) =>
        createPublicClient({
          chain,
          // Every read is fresh: a cached head would hold confirmations back.
          cacheTime: 0,
          transport: http(url, {
            fetchFn: boundedFetch({ timeoutMs: timeout, maxAnswerBytes: RPC_ANSWER_BYTES }),
            timeout,
            retryCount: RPC_RETRIES,
            retryDelay: 100,
          }),
        }) as PublicClient,
    ),
  };
}

/**
 * How an RPC is named in a payment's evidence, which both parties (and the reputation) read:
 * its host alone, since providers put API keys in the path or the query. The position tells
 * apart two RPCs on one host.
 */
export function rpcName(client: PublicClient, index: number): string {
  const url = (client.transport as { url?: unknown }).url;
  try {
    if (typeof url === 'string') return `${new URL(url).host}#${index + 1}`;
  } catch {
    // Not a URL: fall through to the position alone.
  }
  return `rpc#${index + 1}`;
}

/** Why a call failed, in one short line (viem's messages run to many lines of hints). */
export function shortReason(error: unknown): string {
  const text =
    error instanceof Error
      ? ((error as { shortMessage?: string }).shortMessage ?? error.message)
      : String(error);
  return text.split('\n')[0]?.slice(0, 200) ?? 'unknown error';
}

/** One RPC's answer for a block: its hash there, null when it knows no block at that height. */
export interface RpcBlockAnswer {
  rpc: string;
  block_hash: string | null;
}

export type AgreedBlockHash =
  | { hash: string; answers: RpcBlockAnswer[] }
  /**
   * `answers` is set when every RPC answered (some block or none) and they still did not all
   * give one hash: the caller may read a reorg into "every RPC answered and none has the
   * block I knew", never into an error.
   */
  | { unknown: string; answers: RpcBlockAnswer[] | null };

const HASH = /^0x[0-9a-f]{64}$/;

/** The hash every RPC gives for block `blockNumber`, or why there is none agreed. */
export async function agreedBlockHash(
  clients: readonly PublicClient[],
  blockNumber: bigint,
): Promise<AgreedBlockHash> {
  const settled = await Promise.allSettled(
    clients.map((client) => client.getBlock({ blockNumber, includeTransactions: false })),
  );
  const answers: RpcBlockAnswer[] = [];
  for (const [index, outcome] of settled.entries()) {
    const rpc = rpcName(clients[index] as PublicClient, index);
    if (outcome.status === 'rejected') {
      if ((outcome.reason as { name?: string }).name === 'BlockNotFoundError') {
        answers.push({ rpc, block_hash: null });
        continue;
      }
      return { unknown: `${rpc}: ${shortReason(outcome.reason)}`, answers: null };
    }
    const block = outcome.value;
    const hash = typeof block.hash === 'string' ? block.hash.toLowerCase() : '';
    if (!HASH.test(hash) || block.number !== blockNumber) {
      return {
        unknown: `${rpc}: answered a block that is not block ${blockNumber}`,
        answers: null,
      };
    }
    answers.push({ rpc, block_hash: hash });
  }
  const first = answers[0]?.block_hash ?? null;
  if (first !== null && answers.every((answer) => answer.block_hash === first)) {
    return { hash: first, answers };
  }
  return { unknown: `the RPCs do not agree on block ${blockNumber}`, answers };
}

/** What `agreedHead` answers. */
export type AgreedHead = { head: bigint } | { unknown: string };

/** The lowest head any RPC reports (a block every RPC has), or why there is none. */
export async function agreedHead(clients: readonly PublicClient[]): Promise<AgreedHead> {
  const settled = await Promise.allSettled(clients.map((client) => client.getBlockNumber()));
  let head: bigint | null = null;
  for (const [index, outcome] of settled.entries()) {
    const rpc = rpcName(clients[index] as PublicClient, index);
    if (outcome.status === 'rejected') return { unknown: `${rpc}: ${shortReason(outcome.reason)}` };
    if (typeof outcome.value !== 'bigint' || outcome.value < 0n) {
      return { unknown: `${rpc}: answered no block number` };
    }
    head = head === null || outcome.value < head ? outcome.value : head;
  }
  return head === null ? { unknown: 'no RPC' } : { head };
}
