import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { specialAddressReason } from './special-addresses.ts';

/** One address a host name resolved to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** How host names are resolved: dns.promises.lookup with `all: true` unless a test passes its own. */
type Resolver = (host: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (host) => {
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

/**
 * Why `address` is refused, or null when it is public: every range of the IANA special-purpose
 * registries (loopback, private, link-local and cloud metadata, CGNAT, documentation,
 * benchmarking, multicast, reserved, NAT64, 6to4, Teredo...), and every IPv6 form carrying an
 * IPv4 address that is refused (special-addresses.ts).
 */
export function blockedReason(address: string): string | null {
  if (isIP(address) === 0) return `${address} is not an IP address`;
  return specialAddressReason(address);
}

/** The URL's host without IPv6 brackets. */
function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

function portOf(url: URL): number {
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
