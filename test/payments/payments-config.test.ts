import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chainAccess } from '../../actors/payments/chain/clients.ts';
import { checkForwarderFactory } from '../../actors/payments/chain/config-check.ts';
import { DETERMINISTIC_FACTORY } from '../../actors/payments/chain/factory.ts';
import { BASE_USDC_ADDRESS, chainSettings } from '../../actors/payments/settings.ts';
import { configFromEnv } from '../../server/config.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { chainConfig } from '../helpers/payments-core.ts';
import { startTestServer } from '../helpers/server.ts';

/**
 * The chain settings (actors/payments/settings.ts, read by server/config.ts): their defaults, their checks
 * with messages that say what to fix, and the start-up check that FORWARDER_FACTORY_ADDRESS
 * computes the deposit addresses the service shows.
 */
const test = suite<{ chain: TestChain }>('payments: chain settings');

test.before(async (context) => {
  context.chain = await startAnvil();
});

test('without chain variables: no RPC (verification off), Base, its USDC, 3 confirmations, 2 s polls, 7 days, the factory at the same address on every chain', () => {
  const config = configFromEnv({});
  assert.equal(chainSettings(config), {
    rpcUrls: [],
    chainId: 8453,
    usdc: BASE_USDC_ADDRESS,
    confirmations: 3,
    pollMs: 2000,
    expiryMs: 168 * 3600_000,
    factory: undefined,
    rpcTimeoutMs: 5000,
    publicRpcUrl: null,
    facilitatorUrl: null,
  });
});

test('X402_FACILITATOR_URL takes one http(s) URL; anything else refuses to start', () => {
  const config = configFromEnv({ X402_FACILITATOR_URL: 'https://x402.example/facilitator' });
  assert.is(chainSettings(config).facilitatorUrl, 'https://x402.example/facilitator');
  assert.throws(
    () => configFromEnv({ X402_FACILITATOR_URL: 'ftp://x402.example' }),
    /X402_FACILITATOR_URL takes the http\(s\) base URL/,
  );
});

test('CHAIN_RPC_URLS takes a comma list and wins over CHAIN_RPC_URL', () => {
  const config = configFromEnv({
    CHAIN_RPC_URL: 'http://one.example',
    CHAIN_RPC_URLS: ' https://a.example/key , http://b.example:8545 ',
  });
  assert.equal(config.chainRpcUrls, ['https://a.example/key', 'http://b.example:8545']);
  assert.equal(configFromEnv({ CHAIN_RPC_URL: 'http://one.example' }).chainRpcUrls, [
    'http://one.example',
  ]);
});

test('a malformed chain variable stops the start with a message naming it', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ USDC_ADDRESS: '0x1234' }, /USDC_ADDRESS must be an address, 0x and 40 hex digits/],
    [
      { FORWARDER_FACTORY_ADDRESS: 'factory' },
      /FORWARDER_FACTORY_ADDRESS must be an address, 0x and 40 hex digits, or off/,
    ],
    [{ CHAIN_RPC_URL: 'ws://node.example' }, /CHAIN_RPC_URL takes http\(s\) URLs/],
    [{ CHAIN_RPC_URLS: 'http://a.example,nonsense' }, /CHAIN_RPC_URLS takes http\(s\) URLs/],
    [{ CHAIN_ID: '0' }, /CHAIN_ID must be at least 1/],
    [{ CONFIRMATIONS: '-1' }, /CONFIRMATIONS must be a whole number/],
    [{ CHAIN_POLL_MS: 'fast' }, /CHAIN_POLL_MS must be a whole number/],
    [{ PAYMENT_EXPIRY_HOURS: '0' }, /PAYMENT_EXPIRY_HOURS must be at least 1/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => configFromEnv(env), message, JSON.stringify(env));
  }
});

test('FORWARDER_FACTORY_ADDRESS=off means no deposit addresses; an address overrides the factory at the same address on every chain', () => {
  for (const off of ['off', ' OFF ']) {
    assert.is(chainSettings(configFromEnv({ FORWARDER_FACTORY_ADDRESS: off })).factory, null);
  }
  const own = '0x00000000000000000000000000000000000000aa';
  assert.is(chainSettings(configFromEnv({ FORWARDER_FACTORY_ADDRESS: own })).factory, own);
  const access = chainAccess({
    ...chainSettings(configFromEnv({})),
    rpcUrls: ['http://a.example'],
  });
  assert.equal([access?.factory, access?.factoryByDefault], [DETERMINISTIC_FACTORY, true]);
});

test('the factory’s address on every chain is pinned: a rebuild of the contracts that moved it would move every deposit address', () => {
  // CREATE2 by the deterministic deployment proxy, zero salt, of artifacts.json's ForwarderFactory.
  assert.is(DETERMINISTIC_FACTORY, '0x768Db773B597Bf25CFA1A7Ed2cfD1F248BbbaD50');
});

test('the factory check passes for the ForwarderFactory and refuses any other contract, or none', async ({
  chain,
}) => {
  const settings = chainSettings({ ...configFromEnv({}), ...chainConfig(chain) });
  const good = chainAccess(settings);
  assert.ok(good);
  await checkForwarderFactory(good);
  for (const wrong of [chain.usdc, '0x00000000000000000000000000000000000000aa']) {
    const access = chainAccess({ ...settings, factory: wrong });
    assert.ok(access);
    try {
      await checkForwarderFactory(access);
      assert.unreachable(`${wrong} is not the factory`);
    } catch (error) {
      assert.match((error as Error).message, /^FORWARDER_FACTORY_ADDRESS 0x[0-9a-fA-F]{40}: /);
    }
  }
});

test('a service whose factory is wrong refuses to start', async ({ chain }) => {
  try {
    const server = await startTestServer({
      ...chainConfig(chain),
      forwarderFactoryAddress: chain.usdc,
    });
    await server.close();
    assert.unreachable('it started');
  } catch (error) {
    assert.match((error as Error).message, /FORWARDER_FACTORY_ADDRESS/);
  }
});

test.run();
