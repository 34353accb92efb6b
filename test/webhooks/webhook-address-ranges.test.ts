import { isIPv4 } from 'node:net';
import * as assert from 'uvu/assert';
import {
  AddressRefused,
  blockedReason,
  checkedAddress,
} from '../../actors/webhooks/address-guard.ts';
import {
  embeddedIPv4,
  ipv6Bytes,
  SPECIAL_IPV4,
  SPECIAL_IPV6,
  type SpecialRange,
} from '../../actors/webhooks/special-addresses.ts';
import { request } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';

/**
 * The webhook address guard against the IANA special-purpose registries whole (issue 32 §5):
 * the table is generated from the registry rows written in actors/webhooks/special-addresses.ts,
 * one address inside each row refused at set_webhook (the real door), and every IPv6 form that
 * carries an IPv4 address decoded. Names and redirects go through the same check
 * (webhooks-ssrf.test.ts).
 */

const test = serverSuite('webhook address guard: the special-purpose registries', () => ({
  config: { webhookAllowPrivate: false },
}));

/** An address in the middle of `row` (its network with the bit after the prefix set). */
function insideOf(row: SpecialRange): string {
  const [network, prefixText] = row.range.split('/') as [string, string];
  const prefix = Number(prefixText);
  if (isIPv4(network)) {
    const bytes = network.split('.').map(Number);
    if (prefix < 32) bytes[prefix >> 3] = (bytes[prefix >> 3] as number) | (0x80 >> (prefix % 8));
    return bytes.join('.');
  }
  const bytes = ipv6Bytes(network);
  if (prefix < 128) bytes[prefix >> 3] = (bytes[prefix >> 3] as number) | (0x80 >> (prefix % 8));
  return Array.from({ length: 8 }, (_, i) =>
    (((bytes[2 * i] as number) << 8) | (bytes[2 * i + 1] as number)).toString(16),
  ).join(':');
}

const ROWS = [...SPECIAL_IPV4, ...SPECIAL_IPV6].map((row) => ({ row, address: insideOf(row) }));
const urlOf = (address: string) =>
  `http://${isIPv4(address) ? address : `[${address}]`}:8080/hooks`;

test('the table holds every row of both registries, each with an address inside it', () => {
  assert.ok(SPECIAL_IPV4.length >= 26, `${SPECIAL_IPV4.length} IPv4 rows`);
  assert.ok(SPECIAL_IPV6.length >= 25, `${SPECIAL_IPV6.length} IPv6 rows`);
  for (const range of [
    '192.0.2.0/24',
    '198.51.100.0/24',
    '203.0.113.0/24',
    '2002::/16',
    '2001::/32',
    '2001:db8::/32',
    '3fff::/20',
    '64:ff9b:1::/48',
  ]) {
    assert.ok(
      [...SPECIAL_IPV4, ...SPECIAL_IPV6].some((row) => row.range === range),
      `${range} is a row`,
    );
  }
});

for (const { row, address } of ROWS) {
  test(`${row.range} (${row.name}): ${address} is refused by set_webhook, naming the range`, async ({
    server,
  }) => {
    assert.match(String(blockedReason(address)), row.range);
    const agent = await server.signUp();
    const refused = await request(server, 'PUT', '/whoami/webhook', {
      token: agent.api_token,
      body: { url: urlOf(address) },
    });
    assert.is(refused.status, 422, `${address}: ${JSON.stringify(refused.body)}`);
    assert.is(refused.body.code, 'webhook_url_refused');
    assert.match(String(refused.body.detail), 'non-public address');
  });
}

/** Every IPv6 form that carries an IPv4 address, each carrying loopback. */
const CARRIERS: [string, string][] = [
  ['IPv4-compatible', '::127.0.0.1'],
  ['IPv4-mapped', '::ffff:7f00:1'],
  ['IPv4-translated', '::ffff:0:7f00:1'],
  ['NAT64', '64:ff9b::7f00:1'],
  ['local-use NAT64 (/48, the u octet skipped)', '64:ff9b:1:7f00:0:100::'],
  ['6to4', '2002:7f00:1::'],
  ['Teredo (the client address inverted)', '2001:0:4136:e378:8000:63bf:80ff:fffe'],
];

for (const [form, address] of CARRIERS) {
  test(`the ${form} form ${address} is decoded to 127.0.0.1 and refused`, async ({ server }) => {
    assert.ok(embeddedIPv4(address).includes('127.0.0.1'), embeddedIPv4(address).join());
    assert.match(String(blockedReason(address)), 'carries 127.0.0.1: Loopback');
    const agent = await server.signUp();
    const refused = await request(server, 'PUT', '/whoami/webhook', {
      token: agent.api_token,
      body: { url: urlOf(address) },
    });
    assert.is(refused.status, 422, `${address}: ${JSON.stringify(refused.body)}`);
    assert.is(refused.body.code, 'webhook_url_refused');
  });
}

test('public addresses pass, IPv4 and IPv6, literal or resolved', async () => {
  for (const address of [
    '93.184.215.14',
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
  ]) {
    assert.is(blockedReason(address), null, address);
  }
  const resolved = await checkedAddress(new URL('https://public.example/hooks'), {
    allowPrivate: false,
    resolve: async () => [{ address: '2606:4700:4700::1111', family: 6 }],
  });
  assert.equal(resolved, { address: '2606:4700:4700::1111', family: 6 });
});

test('a name resolving to an address that carries a private one is refused after DNS', async () => {
  for (const address of ['2002:a00:1::', '::ffff:0:a9fe:a9fe', '192.0.2.10']) {
    try {
      await checkedAddress(new URL('https://sneaky.example/hooks'), {
        allowPrivate: false,
        resolve: async () => [{ address, family: isIPv4(address) ? 4 : 6 }],
      });
      assert.unreachable(`${address} passed`);
    } catch (error) {
      assert.instance(error, AddressRefused);
      assert.match((error as Error).message, `sneaky.example resolves to ${address}`);
    }
  }
});

test.run();
