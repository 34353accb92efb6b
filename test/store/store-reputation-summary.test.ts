import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import {
  agreeAll,
  dealRoom,
  dealText,
  deliver,
  lineOf,
  listed,
  rate,
  reputationOf,
} from '../helpers/deals.ts';
import {
  needIn,
  postListing,
  repairIn,
  storeJson,
  storeSuite,
  type Listing,
} from '../helpers/store.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * The reputation summary the store shows beside each listing (GET /store as JSON and markdown,
 * post_listing's matches) carries its author's counts, the same as the full record at
 * GET /agents/<id>/reputation.
 */
const test = storeSuite('store: the reputation summary of each listing');

type Summary = {
  deals_agreed: number;
  payments_made: number;
  payments_received: number;
  payment_backed_ratings: number;
  average_score: number | null;
  url: string;
};
type Shown = Listing & { reputation: Summary };

/** What the summary should say of `agent`: the counts of its full record and a link to it. */
async function expectedSummary(server: TestServer, agent: Agent): Promise<Summary> {
  const { counts, ratings } = await reputationOf(server, agent);
  const scores = (ratings as { score: number | null }[]).flatMap((r) => r.score ?? []);
  const mean = scores.reduce((sum, score) => sum + score, 0) / scores.length;
  return {
    deals_agreed: counts.deals_agreed as number,
    payments_made: counts.payments_made as number,
    payments_received: counts.payments_received as number,
    payment_backed_ratings: counts.payment_backed_ratings as number,
    average_score: scores.length === 0 ? null : Math.round(mean * 100) / 100,
    url: server.url(`/agents/${agent.agent_id}/reputation`),
  };
}

/** The markdown store's author line of a listing. */
function authorLine(page: string, listingId: string): string {
  const start = page.indexOf(`listing \`${listingId}\``);
  assert.ok(start >= 0, `the markdown store shows ${listingId}`);
  const line = page
    .slice(start)
    .split('\n')
    .find((l) => l.startsWith('- Author: '));
  assert.ok(line, `the listing ${listingId} has an author line`);
  return line;
}

test("each listing's reputation summary counts its author's deals as the reputation record does, in the store's JSON and markdown and in post_listing's matches; an agent with no deals shows zeros", async ({
  server,
}) => {
  // Two deals for `both` (one with `seller`, one with `third`), delivered and rated.
  const { workspaceId, agents, at } = await dealRoom(server, 3, 2);
  const [both, seller, third] = agents as [Agent, Agent, Agent];
  const firstDeal = await agreeAll(server, [both, seller], workspaceId, at);
  await saveFile(server, seller, workspaceId, 'work.txt', 'the work');
  assert.is((await deliver(server, seller, firstDeal, ['work.txt'])).status, 201);
  assert.is((await rate(server, both, firstDeal, seller, { score: 5 })).status, 201);
  await saveFile(
    server,
    both,
    workspaceId,
    'second.md',
    dealText('A second logo', [lineOf(both, 0), lineOf(third, 1)]),
  );
  const secondDeal = await agreeAll(
    server,
    [both, third],
    workspaceId,
    await listed(server, both, workspaceId, 'second.md'),
    'second.md',
  );
  assert.is((await rate(server, third, secondDeal, both, { score: 4 })).status, 201);

  const place = `Town ${randomUUID().slice(0, 8)}`;
  const byBoth = await postListing(server, both, repairIn(place, { name: 'Repairs by both' }));
  const bySeller = await postListing(
    server,
    seller,
    repairIn(place, { name: 'Repairs by seller' }),
  );
  assert.is(byBoth.status, 201, JSON.stringify(byBoth.body));
  assert.is(bySeller.status, 201, JSON.stringify(bySeller.body));
  const newcomer = await server.signUp();
  const byNewcomer = await postListing(server, newcomer, needIn(place));
  assert.is(byNewcomer.status, 201, JSON.stringify(byNewcomer.body));

  const expected = new Map([
    [byBoth.body.listing_id, await expectedSummary(server, both)],
    [bySeller.body.listing_id, await expectedSummary(server, seller)],
    [byNewcomer.body.listing_id, await expectedSummary(server, newcomer)],
  ]);
  assert.is(expected.get(byBoth.body.listing_id)?.deals_agreed, 2, 'both agreed two deals');
  assert.is(expected.get(bySeller.body.listing_id)?.deals_agreed, 1, 'seller agreed one deal');
  assert.equal(
    expected.get(byNewcomer.body.listing_id),
    {
      deals_agreed: 0,
      payments_made: 0,
      payments_received: 0,
      payment_backed_ratings: 0,
      average_score: null,
      url: server.url(`/agents/${newcomer.agent_id}/reputation`),
    },
    'a newcomer has nothing on record',
  );

  const matches = byNewcomer.body.matches as Shown[];
  assert.equal(
    Object.fromEntries(matches.map((m) => [m.listing_id, m.reputation])),
    {
      [byBoth.body.listing_id]: expected.get(byBoth.body.listing_id),
      [bySeller.body.listing_id]: expected.get(bySeller.body.listing_id),
    },
    "post_listing's matches carry their authors' counts",
  );

  const query = `?place=${encodeURIComponent(place)}`;
  const json = await storeJson(server, query, newcomer.api_token);
  assert.is(json.status, 200, JSON.stringify(json.body));
  const shown = json.body.listings as Shown[];
  assert.is(shown.length, 3);
  for (const listing of shown) {
    assert.equal(listing.reputation, expected.get(listing.listing_id), listing.agent_written.name);
  }

  const anonymous = await server.get(`/store${query}`);
  assert.is(anonymous.status, 200);
  const page = await anonymous.text();
  for (const [listingId, r] of expected) {
    assert.ok(
      authorLine(page, listingId).endsWith(
        `reputation: ${r.deals_agreed} agreed deal${r.deals_agreed === 1 ? '' : 's'}, ${r.payments_made} payment${r.payments_made === 1 ? '' : 's'} made, ${r.payments_received} payment${r.payments_received === 1 ? '' : 's'} received, ${r.payment_backed_ratings} payment-backed rating${r.payment_backed_ratings === 1 ? '' : 's'}${r.average_score === null ? '' : `, average score ${r.average_score} of 5`} ([record](${r.url}))`,
      ),
      `the markdown store counts as the record of ${listingId}`,
    );
  }
});

test.run();
