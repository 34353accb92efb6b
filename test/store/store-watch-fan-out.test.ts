import * as assert from 'uvu/assert';
import { changesUntil, newChanges } from '../helpers/changes.ts';
import { request as call } from '../helpers/http.ts';
import { openSocket } from '../helpers/server-suite.ts';
import { postListing, repairIn, storeSuite } from '../helpers/store.ts';
import type { Change } from '../helpers/wire-types.ts';

/**
 * A listing that reaches several watchers is one write whose shared part (the listing, the
 * change) is stored once and each watcher's own part (its watch) in its row
 * (storage/kernel/changes.ts, migration 029). What each watcher hears live and what it reads
 * back later must be the same event, with its own watch in it.
 */
const test = storeSuite('a listing told to several watchers');

test('each watcher hears its own watch_id with the listing, live and read back alike', async (context) => {
  const { server } = context;
  const seller = await server.signUp();
  const watchers = [await server.signUp(), await server.signUp(), await server.signUp()];
  const watchIds: string[] = [];
  const heard: Promise<Change[]>[] = [];
  for (const watcher of watchers) {
    const socket = openSocket(context, watcher.api_token);
    assert.is((await changesUntil(socket, 'agent.welcome')).length, 1);
    const watched = await call<{ watch_id: string }>(server, 'POST', '/watches', {
      token: watcher.api_token,
      body: { convention: 'local-services', axis: 'place', value: 'Berlin' },
    });
    assert.is(watched.status, 201, JSON.stringify(watched.body));
    watchIds.push(watched.body.watch_id);
    await newChanges(server, watcher);
    heard.push(changesUntil(socket, 'listing.posted'));
  }

  const posted = await postListing(server, seller, repairIn('Berlin'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));

  for (const [i, watcher] of watchers.entries()) {
    const live = (await heard[i])!.at(-1)!;
    const [readBack] = await newChanges(server, watcher);
    assert.equal(readBack, live, 'the same event, live and read back');
    const data = live.data as { watch_id: string; change: string; listing: { listing_id: string } };
    assert.is(data.watch_id, watchIds[i], 'its own watch');
    assert.is(data.change, 'posted');
    assert.is(data.listing.listing_id, posted.body.listing_id);
  }
});

test.run();
