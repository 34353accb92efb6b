/**
 * The EIP-712 domain (name, version) of the token payments are made in, as x402's `exact` scheme
 * needs it in `extra` to sign an EIP-3009 authorization (@x402/evm refuses requirements without
 * it). Read from the token contract itself, so a payer signs for the token actually on this
 * chain (Base's USDC, Base Sepolia's, or the test token on anvil), never for a name from a table.
 *
 * Read once per token and kept for the life of the process: a token's name and version are
 * constants of its contract. A read that fails is kept for a minute and then asked again, so
 * that while the RPCs are down an x402 answer does not wait on them each time; concurrent
 * answers share one read. As everywhere on the chain side, one RPC is not believed
 * alone: every configured RPC must give the same name and version, or there is no domain.
 */
import { parseAbi, type Address, type PublicClient } from 'viem';
import type { ChainAccess } from './clients.ts';

export interface TokenDomain {
  name: string;
  version: string;
}

const DOMAIN_ABI = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
]);

/** Longer than any real token's name or version: a contract answering more is not believed. */
const MAX_DOMAIN_TEXT = 100;

/** How long a failed read stands before the chain is asked again. */
const FAILED_READ_KEPT_MS = 60_000;

/** One read per chain access and token: kept for good when it succeeds, a minute when not. */
const reads = new WeakMap<ChainAccess, Map<string, Promise<TokenDomain | null>>>();

/**
 * The token's EIP-712 domain as the chain states it, or null when the chain is not the one the
 * payment is on, the token has no `name()`/`version()`, or the RPCs fail or disagree.
 */
export async function tokenDomain(
  chain: ChainAccess | null,
  chainId: number,
  token: string,
): Promise<TokenDomain | null> {
  if (!chain || chain.chainId !== chainId || chain.clients.length === 0) return null;
  let byToken = reads.get(chain);
  if (!byToken) reads.set(chain, (byToken = new Map()));
  const key = token.toLowerCase();
  const kept = byToken.get(key);
  if (kept) return kept;
  const read = agreedDomain(chain.clients, token as Address);
  byToken.set(key, read);
  const domain = await read;
  if (domain === null) {
    const forget = setTimeout(() => byToken.delete(key), FAILED_READ_KEPT_MS);
    forget.unref();
  }
  return domain;
}

async function agreedDomain(
  clients: readonly PublicClient[],
  token: Address,
): Promise<TokenDomain | null> {
  const answers = await Promise.all(clients.map((client) => domainFrom(client, token)));
  const [first] = answers;
  if (!first) return null;
  const agreed = answers.every(
    (answer) => answer?.name === first.name && answer.version === first.version,
  );
  return agreed ? first : null;
}

async function domainFrom(client: PublicClient, token: Address): Promise<TokenDomain | null> {
  try {
    const [name, version] = await Promise.all([
      client.readContract({ address: token, abi: DOMAIN_ABI, functionName: 'name' }),
      client.readContract({ address: token, abi: DOMAIN_ABI, functionName: 'version' }),
    ]);
    const fits = (text: string) => text.length > 0 && text.length <= MAX_DOMAIN_TEXT;
    return fits(name) && fits(version) ? { name, version } : null;
  } catch {
    // No such function, a revert, a timeout: no domain rather than a guessed one.
    return null;
  }
}
