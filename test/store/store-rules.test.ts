import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { NO_REPUTATION_COUNTS } from '../helpers/deals.ts';
import type { DirectInput } from '../helpers/direct.ts';
import {
  directStore,
  directWholeStore,
  postedDirect,
  startDirectStore,
  type DirectStoreContext,
} from '../helpers/direct-store.ts';
import { needIn, repairIn } from '../helpers/store.ts';

/**
 * The store's rules through the direct door: its filters and paging, and public reputation.
 * The store as the HTTP door shows it (markdown, contacts by token): store.test.ts.
 */
const test = suite<DirectStoreContext>('the store read without a transport');

test.before(async (context) => {
  Object.assign(context, await startDirectStore());
});
test.after(async ({ server }) => {
  await server.close();
});

const ids = (listings: { listing_id: string }[]) => listings.map((l) => l.listing_id);

test('the store filters by convention, kind, words, and place whatever the convention calls it, and pages through every listing once', async ({
  door,
}) => {
  const author = await door.signUp();
  const repair = await postedDirect(door, author, repairIn('Berlin'));
  const lawyer = await postedDirect(door, author, {
    kind: 'can',
    convention: 'legal-services',
    name: 'Tenancy law advice',
    description: 'Leases, deposits, rent increases.',
    can: 'I advise tenants and landlords.',
    dimensions: { practice_area: 'tenancy', jurisdiction: 'Germany', city: 'berlin' },
  });
  const munich = await postedDirect(door, author, {
    ...needIn('Munich'),
    name: 'A cleaner in Munich',
    need: 'Weekly cleaning of a flat.',
    dimensions: { service: 'cleaning', location: 'Munich' },
  });
  const [r, l, m] = [repair.listing_id, lawyer.listing_id, munich.listing_id];

  const filtered = async (filter: DirectInput<'read_store'>) =>
    (await directStore(door, { limit: 500, ...filter })).listings;

  const legal = await filtered({ convention: 'legal-services' });
  assert.ok(ids(legal).includes(l));
  assert.ok(
    legal.every((x) => x.convention === 'legal-services'),
    'only legal-services',
  );

  const needs = await filtered({ kind: 'need' });
  assert.ok(ids(needs).includes(m));
  assert.ok(
    needs.every((x) => x.kind === 'need'),
    'only needs',
  );

  const words = ids(await filtered({ q: 'repairing' }));
  assert.ok(words.includes(r), 'repairing finds repair');
  assert.not.ok(words.includes(l) || words.includes(m));

  const inBerlin = ids(await filtered({ place: 'BERLIN' }));
  assert.ok(inBerlin.includes(r), 'location: Berlin on local-services');
  assert.ok(inBerlin.includes(l), 'city: berlin on legal-services');
  assert.not.ok(inBerlin.includes(m), 'not Munich');

  const all = ids(await directWholeStore(door));
  const walked: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages <= all.length; pages++) {
    const page = await directStore(door, { limit: 1, ...(cursor ? { cursor } : {}) });
    assert.is(page.listings.length, 1);
    walked.push(...ids(page.listings));
    cursor = page.next_cursor;
    if (cursor === null) break;
  }
  assert.is(cursor, null, 'the walk ends');
  assert.equal(walked, all, 'every listing once, newest first');
});

test('reputation is public: zeros and the name for a new agent, 404 for an unknown one', async ({
  door,
}) => {
  const agent = await door.signUp();
  const shown = await door.call('get_reputation', { agent_id: agent.agent_id });
  const { since, ...rest } = shown;
  assert.ok(Date.parse(since) > 0, 'since is a time');
  assert.equal(rest, {
    agent_id: agent.agent_id,
    name: agent.name,
    counts: NO_REPUTATION_COUNTS,
    counterparties: [],
    ratings: [],
    payments: [],
  });
  const unknown = await door.refusal('get_reputation', { agent_id: randomUUID() });
  assert.is(unknown.code, 'not_found');
});

test.run();
