import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startPaymentWatcher } from '../../actors/payments/chain/watcher.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { rate, reputationOf } from '../helpers/deals.ts';
import { callJson } from '../helpers/http.ts';
import { startLiarRpc } from '../helpers/liar-rpc.ts';
import {
  agreedPair,
  askPayment,
  bury,
  chainConfig,
  getPayment,
  partyKeys as keys,
  type PaymentBody,
  readLog,
  requestedPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { startTestServer } from '../helpers/server.ts';

/**
 * Issue 32 §1, end to end on a real chain: a transfer made before a payment was requested (even
 * before its agents existed) is refused by every report, passed over by the watcher, and never
 * makes the payment final, a rating payment-backed or a payment count; the payer's new transfer
 * after the request does all of that. And the block a payment is requested at: the highest head
 * any RPC reports, and no payment at all while no RPC answers one.
 */
const test = suite<{ chain: TestChain }>('a transfer made before the request');

const SEVEN = 7_000_000n;

test.before(async (context) => {
  context.chain = await startAnvil();
  await context.chain.mint(keys(context.chain).payer.address, 100n * SEVEN);
});

test.after(async ({ chain }) => {
  await chain.stop();
});

test('an old transfer is refused by both reports, never final, never payment-backed; a new one is', async ({
  chain,
}) => {
  const { payer: payerKey, payee: payeeKey } = keys(chain);
  // 7 USDC to the payee's address before the service (and so both agents) even exist.
  const old = await chain.transfer(payerKey, payeeKey.address, SEVEN);
  const server = await startTestServer({ ...chainConfig(chain), chainPollMs: 0 });
  const watcher = startPaymentWatcher(server.services, (line) => console.log(line), {
    poll: false,
  });
  try {
    const deal = await agreedPair(server);
    const { payee, payer, dealId, workspaceId } = deal;
    assert.is((await setPayout(server, payee, payeeKey)).status, 200);
    assert.is((await setPayout(server, payer, payerKey)).status, 200);
    const payment = await requestedPayment(server, deal, '7.00', 'the logo');
    const head = await chain.publicClient.getBlockNumber();
    assert.is(payment.requested_at_block, Number(head));
    assert.ok(Number(old.blockNumber) <= Number(payment.requested_at_block));

    const byPayer = await callJson<PaymentBody>(
      server,
      'POST',
      `/payments/${payment.payment_id}/tx`,
      payer.api_token,
      { tx_hash: old.hash },
    );
    assert.is(byPayer.status, 422, JSON.stringify(byPayer.body));
    assert.is(byPayer.headers.get('content-type'), 'application/problem+json');
    assert.is(byPayer.body.code, 'tx_before_request');
    assert.equal(
      [byPayer.body.block_number, byPayer.body.requested_at_block],
      [Number(old.blockNumber), payment.requested_at_block],
    );
    const byAnyone = await callJson<PaymentBody>(
      server,
      'POST',
      `/pay/${payment.payment_id}/tx`,
      null,
      { tx_hash: old.hash },
    );
    assert.equal([byAnyone.status, byAnyone.body.code], [422, 'tx_before_request']);

    // The watcher reads the old block too (its cursor starts below it) and passes over it.
    await bury(chain, watcher);
    const untouched = await getPayment(server, payer, payment.payment_id);
    assert.equal([untouched.body.status, untouched.body.tx_hash], ['requested', null]);
    assert.is(untouched.body.reported_tx_hash, null, 'a refused hash is not kept');
    const rated = await rate(server, payer, dealId, payee);
    assert.equal([rated.status, rated.body.payment_backed], [201, false]);
    const before = await reputationOf(server, payee);
    assert.equal([before.counts.payments_received, before.counts.payment_backed_ratings], [0, 0]);
    const log = await readLog(server, payee, workspaceId);
    assert.equal(
      log.body.lines.map((line) => line.kind),
      ['payment.requested'],
    );

    // The payer pays after the request: that transfer is credited, final, and backs the rating.
    const paid = await chain.transfer(payerKey, payeeKey.address, SEVEN);
    const seen = await callJson<PaymentBody>(
      server,
      'POST',
      `/payments/${payment.payment_id}/tx`,
      payer.api_token,
      { tx_hash: paid.hash },
    );
    assert.equal([seen.status, seen.body.status], [200, 'seen']);
    await bury(chain, watcher);
    assert.is((await getPayment(server, payee, payment.payment_id)).body.status, 'final');
    const after = await reputationOf(server, payee);
    assert.equal([after.counts.payments_received, after.counts.payment_backed_ratings], [1, 1]);
  } finally {
    await watcher.stop();
    await server.close();
  }
});

test('no payment is requested while no RPC answers with the chain’s head', async ({ chain }) => {
  const silent = await startLiarRpc('silent');
  const server = await startTestServer({
    ...chainConfig(chain),
    chainRpcUrls: [silent.url],
    // The start-up check of the factory would need the RPC: this service has none.
    forwarderFactoryAddress: null,
    chainPollMs: 0,
    chainRpcTimeoutMs: 200,
  });
  try {
    const deal = await agreedPair(server);
    assert.is((await setPayout(server, deal.payee, keys(chain).payee)).status, 200);
    const asked = await askPayment(server, deal, '7.00', 'the logo');
    assert.equal([asked.status, asked.body.code], [503, 'chain_unavailable']);
    assert.ok(asked.headers.get('retry-after'));
    assert.equal(
      (await readLog(server, deal.payee, deal.workspaceId)).body.lines,
      [],
      'nothing written',
    );
  } finally {
    await server.close();
    await silent.stop();
  }
});

test('the block recorded is the highest any RPC reports: a lagging RPC does not lower it', async ({
  chain,
}) => {
  // A second node of the same chain id, 40 blocks ahead (same deployer: same contract addresses).
  const ahead = await startAnvil();
  await ahead.mine(40 + Number(await chain.publicClient.getBlockNumber()));
  const server = await startTestServer({
    ...chainConfig(chain),
    chainRpcUrls: [chain.url, ahead.url],
    chainPollMs: 0,
  });
  try {
    const deal = await agreedPair(server);
    assert.is((await setPayout(server, deal.payee, keys(chain).payee)).status, 200);
    const payment = await requestedPayment(server, deal, '7.00', 'the logo');
    const highest = await ahead.publicClient.getBlockNumber();
    assert.is(payment.requested_at_block, Number(highest));
    assert.ok(Number(highest) > Number(await chain.publicClient.getBlockNumber()));
  } finally {
    await server.close();
    await ahead.stop();
  }
});

test.run();
