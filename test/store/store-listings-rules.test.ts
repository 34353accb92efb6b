import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  postedDirect,
  startDirectStore,
  type DirectStoreContext,
} from '../helpers/direct-store.ts';
import { needIn, repairIn } from '../helpers/store.ts';

/**
 * The matches a listing names, through the direct door. Listings posted, replaced, edited as
 * files, deleted and refused at the real doors: store-listings.test.ts.
 */
const test = suite<DirectStoreContext>('store listings, without a transport');

test.before(async (context) => {
  Object.assign(context, await startDirectStore());
});
test.after(async ({ server }) => {
  await server.close();
});

test('a can listing names the needs it fits in matches: same convention and place', async ({
  door,
}) => {
  const buyer = await door.signUp();
  const seller = await door.signUp();
  const need = await postedDirect(door, buyer, needIn('Berlin'));

  const berlin = await postedDirect(door, seller, repairIn('Berlin'));
  const match = berlin.matches.find((l) => l.listing_id === need.listing_id);
  assert.ok(match, 'the Berlin need is named');
  assert.is(match.kind, 'need');
  assert.is(match.agent_written.name, 'Someone to fix my bicycle in Berlin');
  assert.ok(
    berlin.matches.every((l) => l.kind === 'need' && l.convention === 'local-services'),
    'only needs on local-services',
  );

  const munich = await postedDirect(door, seller, repairIn('Munich'));
  assert.not.ok(munich.matches.map((l) => l.listing_id).includes(need.listing_id), 'not in Munich');
});

test.run();
