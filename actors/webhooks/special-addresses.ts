/**
 * The address ranges no webhook may reach, written from the IANA special-purpose address
 * registries whole (iana-ipv4-special-registry, iana-ipv6-special-registry, as of 2025), plus
 * the multicast blocks and the deprecated forms of the address-space registries. Every row is
 * refused, whatever its "globally reachable" column says: the anycast and AS112 rows are
 * infrastructure, never an agent's receiver. test/webhooks/webhook-address-ranges.test.ts refuses one
 * address inside each row, so a row added here is tested by the same table.
 *
 * An IPv6 address can also carry an IPv4 address (mapped, compatible, translated, NAT64, 6to4,
 * Teredo): `embeddedIPv4` decodes every such form so that the IPv4 rules judge what it carries.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';

export interface SpecialRange {
  /** `network/prefix`. */
  range: string;
  /** The registry's name for it. */
  name: string;
  /** The RFC (or registry) that sets it aside. */
  source: string;
}

export const SPECIAL_IPV4: readonly SpecialRange[] = [
  { range: '0.0.0.0/8', name: 'This network', source: 'RFC 791' },
  { range: '0.0.0.0/32', name: 'This host on this network', source: 'RFC 1122' },
  { range: '10.0.0.0/8', name: 'Private-Use', source: 'RFC 1918' },
  { range: '100.64.0.0/10', name: 'Shared Address Space', source: 'RFC 6598' },
  { range: '127.0.0.0/8', name: 'Loopback', source: 'RFC 1122' },
  { range: '169.254.0.0/16', name: 'Link Local', source: 'RFC 3927' },
  { range: '172.16.0.0/12', name: 'Private-Use', source: 'RFC 1918' },
  { range: '192.0.0.0/24', name: 'IETF Protocol Assignments', source: 'RFC 6890' },
  { range: '192.0.0.0/29', name: 'IPv4 Service Continuity Prefix', source: 'RFC 7335' },
  { range: '192.0.0.8/32', name: 'IPv4 dummy address', source: 'RFC 7600' },
  { range: '192.0.0.9/32', name: 'Port Control Protocol Anycast', source: 'RFC 7723' },
  { range: '192.0.0.10/32', name: 'Traversal Using Relays around NAT Anycast', source: 'RFC 8155' },
  { range: '192.0.0.170/32', name: 'NAT64/DNS64 Discovery', source: 'RFC 8880' },
  { range: '192.0.0.171/32', name: 'NAT64/DNS64 Discovery', source: 'RFC 8880' },
  { range: '192.0.2.0/24', name: 'Documentation (TEST-NET-1)', source: 'RFC 5737' },
  { range: '192.31.196.0/24', name: 'AS112-v4', source: 'RFC 7535' },
  { range: '192.52.193.0/24', name: 'AMT', source: 'RFC 7450' },
  { range: '192.88.99.0/24', name: 'Deprecated (6to4 Relay Anycast)', source: 'RFC 7526' },
  { range: '192.168.0.0/16', name: 'Private-Use', source: 'RFC 1918' },
  { range: '192.175.48.0/24', name: 'Direct Delegation AS112 Service', source: 'RFC 7534' },
  { range: '198.18.0.0/15', name: 'Benchmarking', source: 'RFC 2544' },
  { range: '198.51.100.0/24', name: 'Documentation (TEST-NET-2)', source: 'RFC 5737' },
  { range: '203.0.113.0/24', name: 'Documentation (TEST-NET-3)', source: 'RFC 5737' },
  { range: '240.0.0.0/4', name: 'Reserved', source: 'RFC 1112' },
  { range: '255.255.255.255/32', name: 'Limited Broadcast', source: 'RFC 919' },
  // The IPv4 address-space registry: not in the special-purpose one, never a receiver.
  { range: '224.0.0.0/4', name: 'Multicast', source: 'RFC 5771' },
];

export const SPECIAL_IPV6: readonly SpecialRange[] = [
  { range: '::1/128', name: 'Loopback Address', source: 'RFC 4291' },
  { range: '::/128', name: 'Unspecified Address', source: 'RFC 4291' },
  { range: '::ffff:0:0/96', name: 'IPv4-mapped Address', source: 'RFC 4291' },
  { range: '64:ff9b::/96', name: 'IPv4-IPv6 Translation (NAT64)', source: 'RFC 6052' },
  { range: '64:ff9b:1::/48', name: 'IPv4-IPv6 Translation, local use', source: 'RFC 8215' },
  { range: '100::/64', name: 'Discard-Only Address Block', source: 'RFC 6666' },
  { range: '100:0:0:1::/64', name: 'Dummy IPv6 Prefix', source: 'RFC 9780' },
  { range: '2001::/23', name: 'IETF Protocol Assignments', source: 'RFC 2928' },
  { range: '2001::/32', name: 'TEREDO', source: 'RFC 4380' },
  { range: '2001:1::1/128', name: 'Port Control Protocol Anycast', source: 'RFC 7723' },
  { range: '2001:1::2/128', name: 'Traversal Using Relays around NAT Anycast', source: 'RFC 8155' },
  {
    range: '2001:1::3/128',
    name: 'DNS-SD Service Registration Protocol Anycast',
    source: 'RFC 9665',
  },
  { range: '2001:2::/48', name: 'Benchmarking', source: 'RFC 5180' },
  { range: '2001:3::/32', name: 'AMT', source: 'RFC 7450' },
  { range: '2001:4:112::/48', name: 'AS112-v6', source: 'RFC 7535' },
  { range: '2001:10::/28', name: 'Deprecated (previously ORCHID)', source: 'RFC 4843' },
  { range: '2001:20::/28', name: 'ORCHIDv2', source: 'RFC 7343' },
  {
    range: '2001:30::/28',
    name: 'Drone Remote ID Protocol Entity Tags (DETs) Prefix',
    source: 'RFC 9374',
  },
  { range: '2001:db8::/32', name: 'Documentation', source: 'RFC 3849' },
  { range: '2002::/16', name: '6to4', source: 'RFC 3056' },
  { range: '2620:4f:8000::/48', name: 'Direct Delegation AS112 Service', source: 'RFC 7534' },
  { range: '3fff::/20', name: 'Documentation', source: 'RFC 9637' },
  { range: '5f00::/16', name: 'Segment Routing (SRv6) SIDs', source: 'RFC 9602' },
  { range: 'fc00::/7', name: 'Unique-Local', source: 'RFC 4193' },
  { range: 'fe80::/10', name: 'Link-Local Unicast', source: 'RFC 4291' },
  // The IPv6 address-space registry: multicast, the deprecated forms, and everything outside
  // global unicast (2000::/3), which covers what any later special row below it may add.
  { range: 'ff00::/8', name: 'Multicast', source: 'RFC 4291' },
  { range: 'fec0::/10', name: 'Site-Local (deprecated)', source: 'RFC 3879' },
  { range: '::/96', name: 'IPv4-compatible Address (deprecated)', source: 'RFC 4291' },
  { range: '::ffff:0:0:0/96', name: 'IPv4-translated Address', source: 'RFC 2765' },
  { range: '::/3', name: 'Not global unicast (outside 2000::/3)', source: 'RFC 4291' },
  { range: '4000::/2', name: 'Not global unicast (outside 2000::/3)', source: 'RFC 4291' },
  { range: '8000::/1', name: 'Not global unicast (outside 2000::/3)', source: 'RFC 4291' },
];

const IPV4_ROWS = SPECIAL_IPV4.map((row) => {
  const [network, prefix] = row.range.split('/') as [string, string];
  const list = new BlockList();
  list.addSubnet(network, Number(prefix), 'ipv4');
  return { row, list };
});

/** The most specific row `address` (an IP address) falls in, or null. */
function rowOf(address: string): SpecialRange | null {
  const v4 = isIPv4(address);
  // IPv6 rows are matched on the 128 bits: BlockList would judge `::ffff:a.b.c.d` by IPv4 rules,
  // while here the mapped form is a row of its own and what it carries is judged apart.
  const rows = v4
    ? IPV4_ROWS.filter(({ list }) => list.check(address, 'ipv4')).map(({ row }) => row)
    : SPECIAL_IPV6.filter((row) => exactlyIn(address, row.range));
  let found: SpecialRange | null = null;
  for (const row of rows) if (!found || prefixOf(row) > prefixOf(found)) found = row;
  return found;
}

const prefixOf = (row: SpecialRange) => Number(row.range.split('/')[1]);

/** Whether an IPv6 address is in a range by its 128 bits (no IPv4-mapped leniency). */
function exactlyIn(address: string, range: string): boolean {
  const [network, prefix] = range.split('/') as [string, string];
  const a = ipv6Bytes(address);
  const n = ipv6Bytes(network);
  const bits = Number(prefix);
  for (let i = 0; i < bits; i++) {
    const mask = 0x80 >> (i % 8);
    if (((a[i >> 3] as number) & mask) !== ((n[i >> 3] as number) & mask)) return false;
  }
  return true;
}

/** The 16 bytes of an IPv6 address (a valid one: callers check isIPv6 first). */
export function ipv6Bytes(address: string): Uint8Array {
  let text = address.split('%')[0] as string;
  const groups: number[] = [];
  // A trailing dotted quad is two groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = (quad[1] as string).split('.').map(Number) as [
      number,
      number,
      number,
      number,
    ];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  groups.push(...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back);
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

const quad = (bytes: ArrayLike<number>, xor = 0) =>
  Array.from({ length: 4 }, (_, i) => ((bytes[i] as number) ^ xor) & 0xff).join('.');

/**
 * The IPv4 addresses an IPv6 address carries, by the form its prefix names (RFC 4291 mapped and
 * compatible, RFC 2765 translated, RFC 6052 NAT64 /96, RFC 8215 local NAT64 /48 with the
 * RFC 6052 `u` octet skipped, RFC 3056 6to4, RFC 4380 Teredo's server and its inverted client).
 */
export function embeddedIPv4(address: string): string[] {
  if (!isIPv6(address)) return [];
  const b = ipv6Bytes(address);
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const last = quad(b.slice(12));
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return [last];
  if (zeros(0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(10, 12)) return [last];
  if (zeros(0, 12) && !zeros(12, 14)) return [last];
  if (exactlyIn(address, '64:ff9b::/96')) return [last];
  if (exactlyIn(address, '64:ff9b:1::/48')) return [quad([b[6], b[7], b[9], b[10]] as number[])];
  if (exactlyIn(address, '2002::/16')) return [quad(b.slice(2, 6))];
  if (exactlyIn(address, '2001::/32')) return [quad(b.slice(4, 8)), quad(b.slice(12), 0xff)];
  return [];
}

/**
 * Why `address` (an IP address) may not be reached, or null when it is a public one: it falls in
 * a special-purpose row, or it carries an IPv4 address that does (the reason names both).
 */
export function specialAddressReason(address: string): string | null {
  const row = isIPv4(address) || isIPv6(address) ? rowOf(address) : null;
  const carried = embeddedIPv4(address).flatMap((inner) => {
    const innerRow = rowOf(inner);
    return innerRow ? [`it carries ${inner}: ${innerRow.name}, ${innerRow.range}`] : [];
  });
  if (!row && carried.length === 0) return null;
  const why = [...(row ? [`${row.name}, ${row.range}, ${row.source}`] : []), ...carried];
  return `${address} is a non-public address (${why.join('; ')})`;
}
