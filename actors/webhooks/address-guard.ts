import { promises as dns } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Where a webhook may not reach (server-side request forgery): loopback, private, link-local
 * (cloud metadata at 169.254.169.254 included), unspecified, CGNAT, multicast and reserved
 * ranges, and their IPv4-mapped IPv6 forms (BlockList checks `::ffff:a.b.c.d` against the IPv4
 * rules). NAT64 (64:ff9b::/96) is refused whole: it can carry any IPv4 address.
 */
const BLOCKED = (() => {
  const list = new BlockList();
  const v4: [string, number][] = [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4],
  ];
  for (const [network, prefix] of v4) list.addSubnet(network, prefix, 'ipv4');
  const v6: [string, number][] = [
    ['::', 128],
    ['::1', 128],
    ['64:ff9b::', 96],
    ['fc00::', 7],
    ['fe80::', 10],
    ['fec0::', 10],
    ['ff00::', 8],
  ];
  for (const [network, prefix] of v6) list.addSubnet(network, prefix, 'ipv6');
  return list;
})();

/** One address a host name resolved to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How host names are resolved: dns.promises.lookup with `all: true` unless a test passes its own. */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (host) => {
  const found = await dns.lookup(host, { all: true, verbatim: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

/** Thrown when a webhook URL reaches somewhere it may not; `message` says which and why. */
export class AddressRefused extends Error {}

export interface AddressPolicy {
  /** WEBHOOK_ALLOW_PRIVATE: every address is allowed (tests, a private deployment). */
  allowPrivate: boolean;
  /**
   * `address:port` pairs allowed although blocked; never from the environment (tests pass them
   * to let exactly one loopback receiver through, to test what it redirects to).
   */
  allowedTargets?: readonly string[];
  resolve?: Resolver;
}

/** Why `address` is refused, or null when it is public. */
export function blockedReason(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  return BLOCKED.check(address, family === 6 ? 'ipv6' : 'ipv4')
    ? `${address} is a loopback, private, link-local or otherwise non-public address`
    : null;
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/**
 * Resolves the URL's host and returns the address to connect to (the first), after checking
 * every address the name has: if ANY is refused, the URL is (a name with one public and one
 * private address would otherwise reach the private one on a later look-up). The caller
 * connects to exactly the address returned (pinned), so a second, different answer from DNS
 * (rebinding) is never used.
 */
export async function checkedAddress(url: URL, policy: AddressPolicy): Promise<ResolvedAddress> {
  const host = hostOf(url);
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal !== 0) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await (policy.resolve ?? systemResolver)(host);
    } catch (error) {
      throw new AddressRefused(
        `${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'no answer'})`,
      );
    }
    if (addresses.length === 0) throw new AddressRefused(`${host} does not resolve`);
  }
  if (!policy.allowPrivate) {
    const port = portOf(url);
    for (const { address } of addresses) {
      const reason = blockedReason(address);
      if (reason === null) continue;
      const target = `${address.includes(':') ? `[${address}]` : address}:${port}`;
      if (policy.allowedTargets?.includes(target)) continue;
      throw new AddressRefused(literal !== 0 ? reason : `${host} resolves to ${reason}`);
    }
  }
  return addresses[0] as ResolvedAddress;
}
