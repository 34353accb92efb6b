import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { getAddress, type Address } from 'viem';
import { depositAddress } from '../../actors/payments/chain/deposit-address.ts';
import {
  DEPLOYMENT_PROXY,
  DETERMINISTIC_FACTORY,
  factoryPresence,
} from '../../actors/payments/chain/factory.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { callJson } from '../helpers/http.ts';
import {
  agreedPair,
  getPayment,
  partyKeys,
  requestedPayment,
  setPayout,
  type PaymentBody,
} from '../helpers/payments-core.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * Deposit addresses out of the box (issue 33 §2): with a chain configured and nothing else
 * (no FORWARDER_FACTORY_ADDRESS, no factory deployed), every payment has its deposit address at
 * the ForwarderFactory's one address on every chain; USDC sent there from a wallet nobody knows,
 * unreported, confirms the payment; `npm run sweep` deploys the factory through the
 * deterministic deployment proxy and moves the money to the payee. The anvil key is one of
 * anvil's public development keys.
 */

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
/** `npm run sweep` (tsx deploy/sweep.ts) on node with tsx's loader: npx would add ~0.3 s a run. */
const sweep = (args: readonly string[], env: NodeJS.ProcessEnv) =>
  run(process.execPath, ['--import', 'tsx', 'deploy/sweep.ts', ...args], { cwd: root, env });
/** Anvil's development key of account 9: public, funded with test ether. */
const BYSTANDER_KEY = '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6';

const test = suite<{ chain: TestChain }>('payments: deposit addresses with nothing deployed');

test.before(async (context) => {
  context.chain = await startAnvil();
});

/**
 * A chain as it is where nobody deployed the factory yet (the test chain did): its account
 * emptied of code and nonce, so CREATE2 may put it there again (the factory keeps no storage).
 */
async function withoutFactory(chain: TestChain): Promise<void> {
  await chain.publicClient.request({
    method: 'anvil_setCode' as never,
    params: [DETERMINISTIC_FACTORY, '0x'] as never,
  });
  await chain.publicClient.request({
    method: 'anvil_setNonce' as never,
    params: [DETERMINISTIC_FACTORY, '0x0'] as never,
  });
}

/** The service as an operator starts it with only the chain's variables set. */
async function serviceOn(chain: TestChain, log: string[]): Promise<TestServer> {
  return startTestServer({
    chainRpcUrls: [chain.url],
    chainId: chain.chainId,
    usdcAddress: chain.usdc,
    confirmations: 2,
    chainPollMs: 50,
    log: (line) => log.push(line),
  });
}

/** Waits, on the payee's feed, until the payment reaches `status`. */
async function until(
  server: TestServer,
  payee: Agent,
  id: string,
  status: string,
  chain: TestChain,
): Promise<PaymentBody> {
  for (let round = 0; round < 60; round++) {
    const shown = await getPayment(server, payee, id);
    if (shown.body.status === status) return shown.body;
    if (shown.body.status === 'seen') await chain.mine(1);
    await callJson(server, 'GET', '/changes/wait?timeout=5', payee.api_token);
  }
  throw new Error(`payment ${id} never became ${status}`);
}

test('with only a chain configured, USDC an unknown wallet sends to the deposit address, unreported, confirms the payment; npm run sweep deploys the factory and pays the payee', async ({
  chain,
}) => {
  await withoutFactory(chain);
  assert.equal(await factoryPresence(chain.publicClient), {
    factoryDeployed: false,
    proxyDeployed: true,
  });
  const log: string[] = [];
  const server = await serviceOn(chain, log);
  try {
    assert.ok(
      log.some((line) =>
        line.includes(
          `deposit addresses from the ForwarderFactory at ${DETERMINISTIC_FACTORY}, not deployed on chain ${chain.chainId} yet`,
        ),
      ),
      log.join('\n'),
    );
    const { payee: payeeKey, stranger } = partyKeys(chain);
    const deal = await agreedPair(server);
    assert.is((await setPayout(server, deal.payee, payeeKey)).status, 200);
    const payment = await requestedPayment(server, deal, '7.00', 'the logo');
    const expected = depositAddress({
      factory: DETERMINISTIC_FACTORY,
      token: chain.usdc,
      payee: payeeKey.address,
      paymentId: payment.payment_id,
    });
    assert.is(payment.deposit_address, expected);
    assert.is(payment.pay_to, expected);
    const pay = await callJson<{ forwarder_factory: string | null }>(
      server,
      'GET',
      new URL(payment.pay_url).pathname,
      null,
    );
    assert.is(pay.body.forwarder_factory, DETERMINISTIC_FACTORY);

    // A wallet the service never heard of (no payout address, no agent) pays; nobody reports.
    await chain.mint(stranger.address, 7_000_000n);
    await chain.transfer(stranger, expected as Address, 7_000_000n);
    await chain.mine(1);
    const confirmed = await until(server, deal.payee, payment.payment_id, 'confirmed', chain);
    assert.is(
      getAddress(String(confirmed.evidence && (confirmed.evidence as { to: string }).to)),
      expected,
    );

    // Anyone with gas sweeps: the factory is deployed on the way, the payee gets the money.
    const before = await chain.balanceOf(payeeKey.address);
    const swept = await sweep([payment.pay_url], {
      ...process.env,
      SWEEP_PRIVATE_KEY: BYSTANDER_KEY,
      CHAIN_RPC_URL: chain.url,
    });
    assert.match(swept.stdout, `deployed the ForwarderFactory at ${DETERMINISTIC_FACTORY}`);
    assert.match(
      swept.stdout,
      `swept 7000000 units (6 decimals) from ${expected} to ${payeeKey.address}`,
    );
    assert.is(await chain.balanceOf(payeeKey.address), before + 7_000_000n);
    assert.is(await chain.balanceOf(expected as Address), 0n);
    assert.ok((await factoryPresence(chain.publicClient)).factoryDeployed);
  } finally {
    await server.close();
  }
});

test('a sweep refuses, in one line, without a key or with a pay URL it cannot read', async ({
  chain,
}) => {
  for (const [args, env, said] of [
    [
      ['http://127.0.0.1:9/pay/x'],
      {},
      /^sweep: SWEEP_PRIVATE_KEY must be the private key|^sweep: cannot read/,
    ],
    [
      ['not-a-url'],
      { SWEEP_PRIVATE_KEY: BYSTANDER_KEY },
      /^sweep: usage: npm run sweep -- <pay_url>/,
    ],
    [
      ['http://127.0.0.1:9/pay/x'],
      { SWEEP_PRIVATE_KEY: BYSTANDER_KEY, CHAIN_RPC_URL: chain.url },
      /^sweep: cannot read http:\/\/127\.0\.0\.1:9\/pay\/x/,
    ],
  ] as const) {
    try {
      await sweep(args, { ...process.env, SWEEP_PRIVATE_KEY: '', ...env });
      assert.unreachable(`${args.join(' ')} was not refused`);
    } catch (error) {
      const { code, stderr } = error as { code: number; stderr: string };
      assert.is(code, 1);
      assert.match(stderr, said);
      assert.is(stderr.trim().split('\n').length, 1, stderr);
    }
  }
});

test('on a chain with neither the factory nor the deployment proxy, payments have no deposit address, and the start says why', async () => {
  const other = await startAnvil();
  try {
    await withoutFactory(other);
    await other.publicClient.request({
      method: 'anvil_setCode' as never,
      params: [DEPLOYMENT_PROXY, '0x'] as never,
    });
    const log: string[] = [];
    const server = await serviceOn(other, log);
    try {
      assert.ok(
        log.some((line) =>
          line.includes(
            `no deposit addresses: chain ${other.chainId} has neither the ForwarderFactory`,
          ),
        ),
        log.join('\n'),
      );
      const deal = await agreedPair(server);
      assert.is((await setPayout(server, deal.payee, partyKeys(other).payee)).status, 200);
      const payment = await requestedPayment(server, deal, '1.00', 'no deposit');
      assert.equal(
        [payment.deposit_address, payment.pay_to],
        [null, partyKeys(other).payee.address],
      );
    } finally {
      await server.close();
    }
  } finally {
    await other.stop();
  }
});

test.run();
