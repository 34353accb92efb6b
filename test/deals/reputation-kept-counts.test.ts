import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { countFinalPayment } from '../../storage/payments/payment-counts.ts';
import {
  countDealPaymentFinal,
  keptReputationCounts,
  recountReputation,
} from '../../storage/deals/reputation-counts.ts';
import { FINAL_PAYMENTS_SQL } from '../../storage/payments/deal-counts.ts';
import {
  agreeAll,
  dealRoom,
  dealText,
  lineOf,
  listed,
  rate,
  reputationOf,
} from '../helpers/deals.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * The reputation's counts are kept as they change (storage/deals/reputation-counts.ts): after a
 * randomized history of deals agreed (some in a second round with more parties), ratings made,
 * corrected and made at the same time, and payments turning final before and after the ratings
 * of their deal, the kept rows equal a full recount of the history, and the record each agent
 * shows equals the recount.
 */
const test = serverSuite('reputation: kept counts');

/** A seeded generator (mulberry32), so a failing history can be replayed from its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * A payment of the deal turning final, written as the move to final writes it (the payment row,
 * then in the same transaction countFinalPayment and countDealPaymentFinal): the chain's part
 * has its own suites (payments-pay-e2e, payments-chain).
 */
async function paymentFinal(
  server: TestServer,
  deal: { dealId: string; workspaceId: string },
  payer: string,
  payee: string,
) {
  const address = `0x${'1'.repeat(40)}`;
  await server.services.driver.transaction(async (tx) => {
    await tx.query(
      `insert into payments (payment_id, deal_id, workspace_id, payer_agent_id, payee_agent_id,
         memo, amount_units, payee_address, chain_id, token_address, status, machine,
         created_at, expires_at, final_at)
       values ($1, $2, $3, $4, $5, $6, 1000000, $7, 8453, $7, 'final', '{}'::jsonb, now(),
         now() + interval '1 day', now())`,
      [randomUUID(), deal.dealId, deal.workspaceId, payer, payee, randomUUID(), address],
    );
    await countFinalPayment(tx, payer, payee);
    await countDealPaymentFinal(tx, deal.dealId, payer, payee);
  });
}

test('after a randomized history the kept counts equal a full recount, and every record shows them', async ({
  server,
}) => {
  const seed = Number(process.env.REPUTATION_SEED ?? Date.now() % 1_000_000);
  const next = random(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
  const { workspaceId, agents } = await dealRoom(server, 6, 2);
  const deals: { dealId: string; workspaceId: string; parties: Agent[] }[] = [];

  for (let i = 0; i < 12; i++) {
    const path = `deals/${i}.md`;
    const parties = agents.filter(() => next() < 0.45);
    while (parties.length < 2) {
      const more = pick(agents);
      if (!parties.includes(more)) parties.push(more);
    }
    await saveFile(
      server,
      agents[0] as Agent,
      workspaceId,
      path,
      dealText(path, parties.map(lineOf)),
    );
    let dealId = await agreeAll(
      server,
      parties,
      workspaceId,
      await listed(server, agents[0] as Agent, workspaceId, path),
      path,
    );
    // A second round with one more party: the first round's parties stay counted.
    const extra = agents.find((a) => !parties.includes(a));
    if (extra && next() < 0.3) {
      parties.push(extra);
      await saveFile(
        server,
        agents[0] as Agent,
        workspaceId,
        path,
        dealText(`${path} again`, parties.map(lineOf)),
      );
      dealId = await agreeAll(
        server,
        parties,
        workspaceId,
        await listed(server, agents[0] as Agent, workspaceId, path),
        path,
      );
    }
    deals.push({ dealId, workspaceId, parties });
  }

  const paid = new Set<string>();
  for (let step = 0; step < 40; step++) {
    const deal = pick(deals);
    const rater = pick(deal.parties);
    const ratee = pick(deal.parties.filter((p) => p !== rater));
    if (next() < 0.15 && !paid.has(deal.dealId)) {
      // Some deals are paid twice: only the first payment turns their ratings backed.
      if (next() < 0.8) paid.add(deal.dealId);
      await paymentFinal(server, deal, rater.agent_id, ratee.agent_id);
      continue;
    }
    const score = next() < 0.25 ? {} : { score: 1 + Math.floor(next() * 5) };
    if (next() < 0.2) {
      // Ratings of one ratee on one deal made at once (a correction racing the first).
      const answers = await Promise.all(
        [0, 1].map(() => rate(server, rater, deal.dealId, ratee, score)),
      );
      for (const answer of answers) assert.ok([201, 409].includes(answer.status), `seed ${seed}`);
      continue;
    }
    const rated = await rate(server, rater, deal.dealId, ratee, score);
    assert.is(rated.status, 201, `seed ${seed}: ${JSON.stringify(rated.body)}`);
  }

  const recount = await recountReputation(server.services.driver, FINAL_PAYMENTS_SQL);
  const kept = await keptReputationCounts(server.services.driver);
  assert.equal(kept.pairs, recount.pairs, `seed ${seed}: the counterparty rows`);
  assert.equal(kept.backedDeals, recount.backedDeals, `seed ${seed}: the backed deals`);
  assert.equal(kept.agents, recount.agents, `seed ${seed}: the agents' records`);

  for (const agent of agents) {
    const shown = await reputationOf(server, agent);
    const counted = recount.agents.get(agent.agent_id);
    assert.equal(
      {
        deals_agreed: shown.counts.deals_agreed,
        distinct_counterparties: shown.counts.distinct_counterparties,
        payment_backed_ratings: shown.counts.payment_backed_ratings,
      },
      {
        deals_agreed: counted?.deals_agreed ?? 0,
        distinct_counterparties: counted?.distinct_counterparties ?? 0,
        payment_backed_ratings: counted?.payment_backed_ratings ?? 0,
      },
      `seed ${seed}: ${agent.agent_id}'s record`,
    );
    const pairs = recount.pairs.filter((p) => p.agent_id === agent.agent_id && p.deals_agreed > 0);
    assert.equal(
      Object.fromEntries(shown.counterparties.map((c) => [c.agent_id, c.deals_agreed])),
      Object.fromEntries(pairs.map((p) => [p.counterparty_id, p.deals_agreed])),
      `seed ${seed}: ${agent.agent_id}'s counterparties`,
    );
  }
});

test.run();
