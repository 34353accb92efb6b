import { BlockList, isIP } from 'node:net';

/** What an address is read from: the peer of the connection and the headers it sent. */
export interface Peer {
  readonly remoteAddress: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Gives the caller's address of a request: the bucket every per-address limit counts in. */
export type AddressOf = (peer: Peer) => string;

/** An IPv4 address as IPv6 writes it (`::ffff:1.2.3.4`): the same caller as `1.2.3.4`. */
const MAPPED_V4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

function plain(address: string): string {
  const mapped = MAPPED_V4.exec(address);
  return mapped ? (mapped[1] as string) : address;
}

/** The peer's own address: no proxy is trusted (TRUSTED_PROXIES empty). */
const peerAddress: AddressOf = (peer) => plain(peer.remoteAddress);

/**
 * Reads TRUSTED_PROXIES: comma-separated addresses (`10.0.0.7`, `::1`) or CIDRs (`10.0.0.0/8`,
 * `fd00::/8`). Throws an error naming the variable on anything else, so that a typo stops
 * start-up instead of quietly trusting nobody (or, worse, the wrong network).
 */
export function trustedProxies(text: string | undefined): BlockList | null {
  const entries = (text ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? null : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    const maxBits = family === 6 ? 128 : 32;
    if (family === 0 || rest.length > 0 || (bits !== null && !(bits <= maxBits)))
      throw new Error(
        `TRUSTED_PROXIES must list addresses or CIDRs separated by commas (e.g. 10.0.0.0/8,::1); "${entry}" is neither`,
      );
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (bits === null) list.addAddress(address, type);
    else list.addSubnet(address, bits, type);
  }
  return list;
}

function trusted(proxies: BlockList, address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return proxies.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * The caller's address as the limits see it. Without trusted proxies, the peer's. When the peer
 * is a trusted proxy, X-Forwarded-For is read from the right (each proxy appends the address it
 * saw): the first entry that is not itself a trusted proxy is the caller. Entries left of it
 * were written by the caller, who may write anything, so they are never read; an untrusted
 * peer's header is ignored whole (a caller cannot pick its own bucket). A malformed entry met
 * before the caller stops the walk at the nearest trusted hop, whose address is then the bucket.
 */
export function addressOf(proxies: BlockList | null): AddressOf {
  if (!proxies) return peerAddress;
  return (peer) => {
    let nearest = plain(peer.remoteAddress);
    if (!trusted(proxies, nearest)) return nearest;
    const forwarded = peer.headers['x-forwarded-for'];
    if (forwarded === undefined) return nearest;
    const hops = forwarded.split(',');
    for (let index = hops.length - 1; index >= 0; index--) {
      const hop = plain(unbracketed((hops[index] as string).trim()));
      if (isIP(hop) === 0) return nearest;
      if (!trusted(proxies, hop)) return hop;
      nearest = hop;
    }
    return nearest;
  };
}

/** `[::1]` (as some proxies write IPv6) is `::1`. */
function unbracketed(hop: string): string {
  return hop.startsWith('[') && hop.endsWith(']') ? hop.slice(1, -1) : hop;
}
