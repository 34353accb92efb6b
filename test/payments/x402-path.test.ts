import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Address } from 'viem';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { deliver, rate, reputationOf } from '../helpers/deals.ts';
import { callJson } from '../helpers/http.ts';
import {
  agreedPair,
  chainConfig,
  getPayment,
  requestedPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { startX402Facilitator, x402Fetch } from '../helpers/x402.ts';

/**
 * One x402 payment's whole path (issue 37), with the x402 project's own client and facilitator
 * code on anvil: a deal, a requested payment, a rating before the money, then one `fetch` of the
 * `pay_url` (402, the signed retry, the facilitator's settlement, 200 with PAYMENT-RESPONSE),
 * `payment.seen`, confirmed and final as the chain goes on, and the rating now payment-backed in
 * the payee's reputation. With X402_PATH_TIMINGS=1 it prints each step's time (no assertion is
 * made of them).
 */

interface Context {
  chain: TestChain;
  server: TestServer;
}
const test = suite<Context>('x402: one payment, request to payment-backed rating');

/** Anvil calls a block finalized 64 below its head. */
const PAST_FINALITY = 70;

test.before(async (context) => {
  context.chain = await startAnvil();
  context.server = await startTestServer({
    ...chainConfig(context.chain),
    x402FacilitatorUrl: (await startX402Facilitator(context.chain, context.chain.accounts[9]!)).url,
  });
});
test.after(async ({ server }) => {
  await server.close();
});

test('a requested payment paid by one x402 fetch turns final and backs the payer’s rating', async ({
  chain,
  server,
}) => {
  const steps: [string, number][] = [];
  let last = performance.now();
  const step = (name: string) => {
    const now = performance.now();
    steps.push([name, now - last]);
    last = now;
  };

  const { payee, payer, dealId } = await agreedPair(server);
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  const payment = await requestedPayment(
    server,
    { payee, payer, dealId },
    '7.25',
    `x402 ${randomUUID()}`,
  );
  step('a deal agreed, the payout address proved, request_payment (201)');
  assert.is((await deliver(server, payee, dealId, ['deal.md'])).status, 201);
  const rated = await rate(server, payer, dealId, payee, { score: 5 });
  assert.is(rated.body.payment_backed, false, 'rated before the money: not backed yet');
  step('deliver and rate, before paying');

  const wallet = chain.accounts[6]!;
  await chain.mint(wallet.address, 7_250_000n);
  const answers: [number, number][] = [];
  const started = performance.now();
  const timed = async (input: RequestInfo | URL, init?: RequestInit) => {
    const answer = await fetch(input, init);
    answers.push([answer.status, performance.now() - started]);
    return answer;
  };
  const pay = x402Fetch(chain, wallet, timed as typeof fetch);
  const answer = await pay(server.url(`/pay/${payment.payment_id}?x402=1`));
  assert.is(answer.status, 200, await answer.clone().text());
  assert.equal(
    answers.map(([status]) => status),
    [402, 200],
  );
  steps.push(['402 with the requirements', answers[0]![1]]);
  steps.push([
    'signed retry: verified, settled by the facilitator, seen on-chain: 200',
    answers[1]![1] - answers[0]![1],
  ]);
  last = performance.now();
  const settled = JSON.parse(
    Buffer.from(answer.headers.get('payment-response')!, 'base64').toString('utf8'),
  ) as { transaction: string };
  assert.is(await chain.balanceOf(payment.pay_to as Address), 7_250_000n);

  const seen = await callJson<{ changes: { type: string; data: { payment_id?: string } }[] }>(
    server,
    'GET',
    '/changes?limit=500',
    payee.api_token,
  );
  assert.ok(
    seen.body.changes.some(
      (c) => c.type === 'payment.seen' && c.data.payment_id === payment.payment_id,
    ),
    'payment.seen in the payee’s feed',
  );
  step('payment.seen in the feed');

  for (const [target, blocks] of [
    ['confirmed', 1],
    ['final', PAST_FINALITY],
  ] as const) {
    await chain.mine(blocks);
    for (let round = 0; round < 60; round++) {
      const shown = await getPayment(server, payee, payment.payment_id);
      if (shown.body.status === target) break;
      await callJson(server, 'GET', '/changes/wait?timeout=5', payee.api_token);
    }
    const shown = await getPayment(server, payee, payment.payment_id);
    assert.is(shown.body.status, target);
    step(`${target} (after ${blocks} more block${blocks > 1 ? 's' : ''})`);
  }
  const final = await getPayment(server, payee, payment.payment_id);
  assert.is(final.body.tx_hash, settled.transaction);

  const reputation = await reputationOf(server, payee);
  const backed = reputation.ratings.find((r) => r.deal_id === dealId);
  assert.is(backed?.payment_backed, true, 'the rating is payment-backed now');
  assert.is(reputation.counts.payments_received, 1);
  step('reputation: the rating payment-backed');

  if (process.env.X402_PATH_TIMINGS === '1') {
    for (const [name, ms] of steps) console.log(`${ms.toFixed(1).padStart(8)} ms  ${name}`);
  }
});

test.run();
