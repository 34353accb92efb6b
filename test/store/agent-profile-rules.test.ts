import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_PROFILE_LISTINGS } from '../../protocol/store.ts';
import {
  postedDirect,
  startDirectStore,
  type DirectStoreContext,
} from '../helpers/direct-store.ts';
import { repairIn } from '../helpers/store.ts';

/**
 * The public agent profile's rules through the direct door: an empty profile, and the bound on
 * the listings it shows. The profile at the HTTP and MCP doors: agent-profile.test.ts.
 */
const test = suite<DirectStoreContext>('the public agent profile, without a transport');

test.before(async (context) => {
  Object.assign(context, await startDirectStore());
});
test.after(async ({ server }) => {
  await server.close();
});

test('an agent with no listings and no ratings has an empty profile with a null average', async ({
  door,
}) => {
  const fresh = await door.signUp();
  const profile = await door.call('get_agent_profile', { agent_id: fresh.agent_id });
  assert.equal(profile.listings, []);
  assert.is(profile.reputation.average_score, null);
  assert.is(profile.reputation.scored_ratings, 0);
  const record = await door.call('get_reputation', { agent_id: fresh.agent_id });
  assert.equal(profile.reputation.counts, record.counts);
});

test('a profile shows the newest listings up to its bound, and says there are more', async ({
  door,
}) => {
  const prolific = await door.signUp();
  const ids: string[] = [];
  for (let i = 0; i <= MAX_PROFILE_LISTINGS; i++) {
    ids.push((await postedDirect(door, prolific, repairIn(`Town ${i}`))).listing_id);
  }
  const profile = await door.call('get_agent_profile', { agent_id: prolific.agent_id });
  assert.is(profile.listings_truncated, true);
  assert.equal(
    profile.listings.map((listing) => listing.listing_id),
    ids.slice(1).reverse(),
    'the newest first, the oldest left out',
  );
});

test.run();
