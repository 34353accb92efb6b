import * as assert from 'uvu/assert';
import { changesUntil } from '../helpers/changes.ts';
import { request as call } from '../helpers/http.ts';
import { mcpClient, openSocket } from '../helpers/server-suite.ts';
import { listingOf, postListing, repairIn, storeSuite } from '../helpers/store.ts';
import { turnsUntil } from '../helpers/turns.ts';
import type { ChangesPage } from '../helpers/wire-types.ts';

/**
 * Watches end to end: each matching listing pushed over socket.io, long-poll and MCP until the
 * watch is deleted, and the bounds of watches.
 */
const test = storeSuite('store watches through socket.io, long-poll and MCP');

/**
 * How long a long-poll waits at most: only a broken push ever waits that long (the test then
 * fails on an empty answer instead of hanging).
 */
const WAIT_SECONDS = 10;

test('a watch pushes each matching listing over socket.io, long-poll and MCP, and nothing else, until it is deleted', async (context) => {
  const { server } = context;
  const seller = await server.signUp();
  const watcher = await server.signUp();
  const socket = openSocket(context, watcher.api_token);
  assert.is((await changesUntil(socket, 'agent.welcome')).length, 1);
  // The watcher's own feedback marks the end of what the socket is to see, with no timer.
  const feedback = async () => {
    const sent = await server.post(
      '/feedback',
      { message: 'hi', category: 'other' },
      watcher.api_token,
    );
    assert.is(sent.status, 202);
  };

  const watched = await call<{ watch_id: string }>(server, 'POST', '/watches', {
    token: watcher.api_token,
    body: { convention: 'local-services', axis: 'place', value: 'Berlin' },
  });
  assert.is(watched.status, 201, JSON.stringify(watched.body));
  const { watch_id } = watched.body;
  // Moves the remembered place past the welcome, so the long-polls wait for what comes next.
  await server.get('/changes', watcher.api_token);
  const overSocket = changesUntil(socket, 'feedback.received');

  // The long-poll is parked (beside the socket) before the listing is posted.
  const waiting = call<ChangesPage>(server, 'GET', `/changes/wait?timeout=${WAIT_SECONDS}`, {
    token: watcher.api_token,
  });
  await turnsUntil(() => server.services.hub.listenerCount(watcher.agent_id) === 2);
  const first = await postListing(server, seller, repairIn('Berlin'));
  assert.is(first.status, 201, JSON.stringify(first.body));
  const polled = await waiting;
  assert.is(polled.status, 200);
  assert.equal(
    polled.body.changes.map((c) => [c.type, listingOf(c).listing_id]),
    [['listing.posted', first.body.listing_id]],
  );
  const [posted] = polled.body.changes;
  assert.is(posted?.data.watch_id, watch_id);
  assert.is(posted?.data.change, 'posted');
  assert.is(listingOf(posted).agent_written?.name, 'Bicycle repair in Berlin');

  // MCP, parked; a listing in Hamburg must not wake it: the next Berlin one does.
  const client = await mcpClient(context, watcher.api_token);
  const overMcp = client.callTool({
    name: 'wait_for_changes',
    arguments: { timeout: WAIT_SECONDS },
  });
  await turnsUntil(() => server.services.hub.listenerCount(watcher.agent_id) === 2);
  const hamburg = await postListing(server, seller, repairIn('Hamburg'));
  assert.is(hamburg.status, 201, JSON.stringify(hamburg.body));
  const second = await postListing(server, seller, repairIn('Berlin', { name: 'Wheels trued' }));
  assert.is(second.status, 201, JSON.stringify(second.body));
  const waited = (await overMcp) as { isError?: boolean; structuredContent?: ChangesPage };
  assert.not.ok(waited.isError, JSON.stringify(waited));
  assert.equal(
    waited.structuredContent?.changes.map((c) => [c.type, listingOf(c).listing_id]),
    [['listing.posted', second.body.listing_id]],
  );

  await feedback();
  assert.equal(
    (await overSocket).map((c) => [c.type, listingOf(c).listing_id]),
    [
      ['listing.posted', first.body.listing_id],
      ['listing.posted', second.body.listing_id],
      ['feedback.received', undefined],
    ],
    'socket.io carried both Berlin listings and not the Hamburg one',
  );

  const listed = await call<{ watches: { watch_id: string; value: string }[] }>(
    server,
    'GET',
    '/watches',
    { token: watcher.api_token },
  );
  assert.equal(
    listed.body.watches.map((w) => [w.watch_id, w.value]),
    [[watch_id, 'Berlin']],
  );
  const deleted = await call(server, 'DELETE', `/watches/${watch_id}`, {
    token: watcher.api_token,
  });
  assert.equal(deleted.body, { watch_id, deleted: true });
  const none = await call<{ watches: unknown[] }>(server, 'GET', '/watches', {
    token: watcher.api_token,
  });
  assert.equal(none.body.watches, []);
  const again = await call(server, 'DELETE', `/watches/${watch_id}`, {
    token: watcher.api_token,
  });
  assert.is(again.status, 404);

  const afterDelete = changesUntil(socket, 'feedback.received');
  const third = await postListing(server, seller, repairIn('Berlin', { name: 'Chains oiled' }));
  assert.is(third.status, 201, JSON.stringify(third.body));
  await feedback();
  assert.equal(
    (await afterDelete).map((c) => c.type),
    ['feedback.received'],
    'nothing pushed after the delete',
  );
});

test('an agent holds at most 100 watches, and a watch must name something', async ({ server }) => {
  const watcher = await server.signUp();
  for (let i = 0; i < 100; i++) {
    const made = await call(server, 'POST', '/watches', {
      token: watcher.api_token,
      body: { q: `bicycle ${i}` },
    });
    assert.is(made.status, 201, JSON.stringify(made.body));
  }
  const over = await call<{ limit: number }>(server, 'POST', '/watches', {
    token: watcher.api_token,
    body: { convention: 'local-services' },
  });
  assert.is(over.status, 409, JSON.stringify(over.body));
  assert.is(over.body.code, 'limit_reached');
  const held = await call<{ watches: unknown[] }>(server, 'GET', '/watches', {
    token: watcher.api_token,
  });
  assert.is(held.body.watches.length, 100);

  const someone = await server.signUp();
  const empty = await call(server, 'POST', '/watches', { token: someone.api_token, body: {} });
  assert.is(empty.status, 400, JSON.stringify(empty.body));
  assert.is(empty.body.code, 'invalid_input');
  const halfAxis = await call(server, 'POST', '/watches', {
    token: someone.api_token,
    body: { axis: 'place' },
  });
  assert.is(halfAxis.status, 400, JSON.stringify(halfAxis.body));
  assert.is(halfAxis.body.code, 'invalid_input');
});

test.run();
