import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { keccak256, parseAbi, toHex, type Address } from 'viem';
import { chainSettings } from '../../actors/payments/settings.ts';
import { configFromEnv } from '../../server/config.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { callJson } from '../helpers/http.ts';
import {
  agreedPair,
  chainConfig,
  requestPayment,
  setPayout,
  type PaymentBody,
} from '../helpers/payments-core.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What `pay` gives a payer to check before paying, through the real doors on a local chain:
 * the factory and salt of the deposit address (the factory's own `addressOf` answers that very
 * address), the transaction already reported (so nobody pays twice), and the public RPC the
 * operator suggests (PUBLIC_RPC_URL, never CHAIN_RPC_URL); and the two settings' refusals.
 */
const test = suite<{ chain: TestChain }>('pay instructions a payer can check before paying');

const FACTORY_ABI = parseAbi([
  'function addressOf(address token, address payee, bytes32 salt) view returns (address)',
]);
const PUBLIC_RPC = 'https://public-rpc.example/base';

type Instructions = PaymentBody & {
  forwarder_factory: string | null;
  deposit_salt: string | null;
  reported_tx_hash: string | null;
  rpc_url: string | null;
  steps: string[];
};

test.before(async (context) => {
  context.chain = await startAnvil();
});
test.after(async ({ chain }) => {
  await chain.stop();
});

async function newPayment(server: TestServer, chain: TestChain) {
  const { payee, payer, dealId } = await agreedPair(server);
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  assert.is((await setPayout(server, payer, chain.accounts[5]!)).status, 200);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: '3.25',
    memo: `memo ${randomUUID()}`,
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  return { payment: asked.body, payer };
}

async function instructions(server: TestServer, paymentId: string) {
  const response = await fetch(server.url(`/pay/${paymentId}`), {
    headers: { accept: 'application/json' },
  });
  assert.is(response.status, 200);
  const text = await response.text();
  return { body: JSON.parse(text) as Instructions, text };
}

async function page(server: TestServer, paymentId: string) {
  const response = await fetch(server.url(`/pay/${paymentId}`), {
    headers: { accept: 'text/html' },
  });
  assert.is(response.status, 200);
  return response.text();
}

test('pay names the factory and salt of the deposit address, and the factory answers that very address on-chain', async ({
  chain,
}) => {
  const server = await startTestServer(chainConfig(chain));
  try {
    const { payment } = await newPayment(server, chain);
    const { body, text } = await instructions(server, payment.payment_id);
    assert.ok(body.deposit_address, 'the service has deposit addresses');
    assert.is(body.forwarder_factory?.toLowerCase(), chain.factory.toLowerCase());
    assert.is(body.deposit_salt, keccak256(toHex(payment.payment_id.toLowerCase())));
    const onChain = await chain.publicClient.readContract({
      address: body.forwarder_factory as Address,
      abi: FACTORY_ABI,
      functionName: 'addressOf',
      args: [
        body.token_address as Address,
        body.payee_address as Address,
        body.deposit_salt as `0x${string}`,
      ],
    });
    assert.is(onChain.toLowerCase(), body.deposit_address.toLowerCase());
    assert.ok(
      body.steps.some((step) => step.includes(`addressOf(`) && step.includes(body.deposit_salt!)),
      'the steps say how to check it',
    );
    // No public RPC configured: none suggested, and the service's own RPC never shown.
    assert.is(body.rpc_url, null);
    assert.is(body.reported_tx_hash, null);
    assert.not.ok(text.includes(chain.url), 'the service’s own RPC is not in the instructions');

    const html = await page(server, payment.payment_id);
    assert.ok(html.includes(`<code id="forwarder-factory">${body.forwarder_factory}</code>`));
    assert.ok(html.includes(`<code id="deposit-salt">${body.deposit_salt}</code>`));
    assert.not.ok(html.includes(chain.url), 'nor in the page');
  } finally {
    await server.close();
  }
});

test('without deposit addresses pay names no factory and no salt', async ({ chain }) => {
  const server = await startTestServer({
    ...chainConfig(chain),
    forwarderFactoryAddress: null,
  });
  try {
    const { payment } = await newPayment(server, chain);
    const { body } = await instructions(server, payment.payment_id);
    assert.equal(
      [body.deposit_address, body.forwarder_factory, body.deposit_salt],
      [null, null, null],
    );
    assert.not.ok((await page(server, payment.payment_id)).includes('id="forwarder-factory"'));
  } finally {
    await server.close();
  }
});

test('with PUBLIC_RPC_URL set pay suggests that RPC, never the service’s own', async ({
  chain,
}) => {
  const server = await startTestServer({ ...chainConfig(chain), publicRpcUrl: PUBLIC_RPC });
  try {
    const { payment } = await newPayment(server, chain);
    const { body, text } = await instructions(server, payment.payment_id);
    assert.is(body.rpc_url, PUBLIC_RPC);
    assert.ok(body.steps.some((step) => step.includes(PUBLIC_RPC)));
    assert.not.ok(text.includes(chain.url));
  } finally {
    await server.close();
  }
});

test('a reported transaction still being checked shows in pay as reported_tx_hash: the steps and the page say not to pay again', async ({
  chain,
}) => {
  const server = await startTestServer(chainConfig(chain));
  try {
    const { payment, payer } = await newPayment(server, chain);
    // A hash no block holds: the check is unknown, the hash kept.
    const hash = keccak256(toHex(`never mined ${randomUUID()}`));
    const reported = await callJson<{ status: string; check: { result: string } | null }>(
      server,
      'POST',
      `/payments/${payment.payment_id}/tx`,
      payer.api_token,
      { tx_hash: hash },
    );
    assert.is(reported.status, 200, JSON.stringify(reported.body));
    assert.is(reported.body.check?.result, 'unknown');
    const { body } = await instructions(server, payment.payment_id);
    assert.is(body.status, 'requested');
    assert.is(body.reported_tx_hash, hash);
    assert.is(body.steps.length, 1);
    assert.match(body.steps[0]!, /do not pay again/);
    assert.ok(body.steps[0]!.includes(hash));
    const html = await page(server, payment.payment_id);
    assert.ok(html.includes(`<code id="reported-tx">${hash}</code>`));
    assert.match(html, /<button class="button" id="wallet-pay" type="button" disabled>/);
  } finally {
    await server.close();
  }
});

test('CHAIN_RPC_TIMEOUT_MS and PUBLIC_RPC_URL: defaults, passed to the chain settings, and refusals naming them', () => {
  const defaults = configFromEnv({});
  assert.is(defaults.chainRpcTimeoutMs, 5000);
  assert.is(defaults.publicRpcUrl, undefined);
  const set = configFromEnv({
    CHAIN_RPC_URL: 'https://key.example/v2/secret',
    CHAIN_RPC_TIMEOUT_MS: '750',
    PUBLIC_RPC_URL: ` ${PUBLIC_RPC} `,
  });
  const settings = chainSettings(set);
  assert.is(settings.rpcTimeoutMs, 750);
  assert.is(settings.publicRpcUrl, PUBLIC_RPC);
  // Never the service's own RPC, even when it is the only one.
  assert.is(
    chainSettings(configFromEnv({ CHAIN_RPC_URL: 'https://a.example' })).publicRpcUrl,
    null,
  );
  for (const [env, message] of [
    [{ CHAIN_RPC_TIMEOUT_MS: '0' }, /CHAIN_RPC_TIMEOUT_MS/],
    [{ CHAIN_RPC_TIMEOUT_MS: '2.5' }, /CHAIN_RPC_TIMEOUT_MS/],
    [{ CHAIN_RPC_TIMEOUT_MS: '-1' }, /CHAIN_RPC_TIMEOUT_MS/],
    [{ PUBLIC_RPC_URL: 'ftp://rpc.example' }, /PUBLIC_RPC_URL/],
    [{ PUBLIC_RPC_URL: 'not a url' }, /PUBLIC_RPC_URL/],
  ] as const) {
    assert.throws(() => configFromEnv(env), message, JSON.stringify(env));
  }
});

test.run();
