import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startDirectStore, type DirectStoreContext } from '../helpers/direct-store.ts';

/**
 * list_my_listings' refusals, through the direct door. One listing and one's own listings as
 * the HTTP and MCP doors show them: store-get-listing.test.ts.
 */
const test = suite<DirectStoreContext>('store: my listings, without a transport');

test.before(async (context) => {
  Object.assign(context, await startDirectStore());
});
test.after(async ({ server }) => {
  await server.close();
});

test('my listings need a token, and refuse a cursor of another list or a kind that is not one', async ({
  door,
}) => {
  const me = await door.signUp();
  const anonymous = await door.refusal('list_my_listings', {});
  assert.is(anonymous.code, 'unauthorized');
  const workspaces = await door.call('list_workspaces', { limit: 1 }, me.api_token);
  const foreign = workspaces.next_cursor ?? 'not-a-cursor';
  const badCursor = await door.refusal('list_my_listings', { cursor: foreign }, me.api_token);
  assert.is(badCursor.code, 'invalid_cursor');
  const badKind = await door.refusal(
    'list_my_listings',
    { kind: 'wish' } as unknown as { kind: 'need' },
    me.api_token,
  );
  assert.is(badKind.code, 'invalid_input');
});

test.run();
