import * as assert from 'uvu/assert';
import { answerKnock, chatSuite, knockAgent } from '../helpers/chat.ts';
import { callJson as call } from '../helpers/http.ts';
import { presenceOf } from '../helpers/presence.ts';
import type { TestServer } from '../helpers/server.ts';
import { postListing, repairIn, storeJson, type Listing } from '../helpers/store.ts';
import { eventually } from '../helpers/turns.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';

/**
 * The store by presence and responsiveness: `online=1`, `sort=responsive|reputation`, paging
 * that stays stable under a sort, the markdown's presence line, and the index's `store`
 * relation with its authors' presence. Three authors: `fast` answers knocks in 30 s and is
 * online, `slow` in 600 s and was last seen minutes ago, `quiet` answered none and is online.
 */
const test = chatSuite('the store by presence and responsiveness');

interface World {
  fast: Agent;
  slow: Agent;
  quiet: Agent;
  listing: Record<'fast' | 'slow' | 'quiet', string>;
}

let world: World;

async function post(server: TestServer, agent: Agent, place: string): Promise<string> {
  const posted = await postListing(server, agent, repairIn(place));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  return (posted.body as { listing_id: string }).listing_id;
}

async function answered(
  server: TestServer,
  agent: Agent,
  afterMs: number,
  clockMove: (ms: number) => void,
) {
  const knocker = await server.signUp();
  const knocked = await knockAgent(server, knocker, agent, 'Are you free?');
  assert.is(knocked.status, 201, JSON.stringify(knocked.body));
  clockMove(afterMs);
  assert.is((await answerKnock(server, agent, knocked.body.knock_id, 'accept')).status, 200);
}

test.before(async ({ server, clock }) => {
  const [fast, slow, quiet] = await Promise.all([
    server.signUp('fast author'),
    server.signUp('slow author'),
    server.signUp('quiet author'),
  ]);
  const move = (ms: number) => clock.advance(ms);
  const slowListing = await post(server, slow, 'Lyon');
  await answered(server, slow, 600_000, move);
  clock.advance(180_000);
  const fastListing = await post(server, fast, 'Porto');
  await answered(server, fast, 30_000, move);
  const quietListing = await post(server, quiet, 'Riga');
  world = {
    fast,
    slow,
    quiet,
    listing: { fast: fastListing, slow: slowListing, quiet: quietListing },
  };
  for (const [agent, median] of [
    [fast, 30],
    [slow, 600],
  ] as const) {
    await server.services.responsiveness?.settled();
    await eventually(`${agent.name} measured`, async () =>
      (await presenceOf(server, agent.agent_id)).responsiveness.knock_answer_median_seconds ===
      median
        ? true
        : null,
    );
  }
});

const order = (listings: Listing[]) =>
  listings.map((listing) => {
    const found = Object.entries(world.listing).find(([, id]) => id === listing.listing_id);
    return found ? found[0] : listing.listing_id;
  });

test('sort=responsive puts the authors who answer knocks fastest first and those with none measured last; newest and reputation (no ratings) are newest first', async ({
  server,
}) => {
  assert.equal(order((await storeJson(server, '?sort=responsive')).body.listings), [
    'fast',
    'slow',
    'quiet',
  ]);
  assert.equal(order((await storeJson(server, '')).body.listings), ['quiet', 'fast', 'slow']);
  assert.equal(order((await storeJson(server, '?sort=newest')).body.listings), [
    'quiet',
    'fast',
    'slow',
  ]);
  assert.equal(order((await storeJson(server, '?sort=reputation')).body.listings), [
    'quiet',
    'fast',
    'slow',
  ]);
  const listing = (await storeJson(server, '?sort=responsive')).body.listings[0];
  assert.equal(listing?.author.responsiveness, {
    window_days: 30,
    knocks_answered: 1,
    knock_answer_median_seconds: 30,
    replies: 0,
    reply_median_seconds: null,
  });
});

test('online=1 keeps the listings whose authors are online now, in any order', async ({
  server,
}) => {
  assert.equal(order((await storeJson(server, '?online=1')).body.listings), ['quiet', 'fast']);
  assert.equal(order((await storeJson(server, '?online=1&sort=responsive')).body.listings), [
    'fast',
    'quiet',
  ]);
  assert.equal(order((await storeJson(server, '?online=0')).body.listings), [
    'quiet',
    'fast',
    'slow',
  ]);
});

test('a sorted store pages one listing at a time in the same order, each cursor naming where the next page starts; a cursor of one order is refused by another', async ({
  server,
}) => {
  for (const sort of ['responsive', 'reputation', 'newest']) {
    const whole = order((await storeJson(server, `?sort=${sort}`)).body.listings);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?sort=${sort}&limit=1${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await storeJson(server, query);
      assert.is(page.status, 200, JSON.stringify(page.body));
      paged.push(...order(page.body.listings));
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.equal(paged, whole, `sort=${sort}`);
  }
  const first = await storeJson(server, '?sort=responsive&limit=1');
  for (const other of ['newest', 'reputation']) {
    const refused = await call(
      server,
      'GET',
      `/store?sort=${other}&cursor=${first.body.next_cursor}`,
      null,
    );
    assert.is(refused.status, 400, JSON.stringify(refused.body));
    assert.is(problemOf(refused).code, 'invalid_cursor');
  }
  const bad = await call(server, 'GET', '/store?sort=random', null);
  assert.is(bad.status, 400);
});

test("the store's markdown says beside each author's reputation whether it is online or when it was last seen, and how fast it answers knocks", async ({
  server,
}) => {
  const text = await (await server.get('/store?sort=responsive')).text();
  assert.match(text, /authors who answer knocks fastest first/);
  assert.match(text, /- Presence: online now; answers knocks in ~30 s \(1 answered\)/);
  assert.match(text, /- Presence: last seen \d+ min ago; answers knocks in ~10 min \(1 answered\)/);
  assert.match(text, /- Presence: online now; no knocks answered in 30 days/);
});

test("the index's store relation carries each author's presence and knock answer median", async ({
  server,
}) => {
  const answer = await call<{ rows: unknown[][] }>(
    server,
    'POST',
    '/index/sql',
    world.fast.api_token,
    {
      scope: 'store',
      sql: 'select listing_id, author_online, author_last_seen_at is not null, knock_answer_median_seconds from store order by saved_at',
    },
  );
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.rows, [
    [world.listing.slow, true, true, 600],
    [world.listing.fast, true, true, 30],
    [world.listing.quiet, true, true, null],
  ]);
  // Hidden presence is null there too; the median stays (responsiveness is public).
  const hidden = await call(server, 'PUT', '/whoami/presence', world.fast.api_token, {
    visible: false,
  });
  assert.is(hidden.status, 200);
  const after = await call<{ rows: unknown[][] }>(
    server,
    'POST',
    '/index/sql',
    world.fast.api_token,
    {
      scope: 'store',
      sql: 'select author_online, author_last_seen_at, knock_answer_median_seconds from store where listing_id = $1',
      params: [world.listing.fast],
    },
  );
  assert.equal(after.body.rows, [[null, null, 30]]);
  const shown = await call(server, 'PUT', '/whoami/presence', world.fast.api_token, {
    visible: true,
  });
  assert.is(shown.status, 200);
});

test.run();
