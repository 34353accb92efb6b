import * as assert from 'uvu/assert';
import type { Socket } from 'socket.io-client';
import { callTool } from '../helpers/clients.ts';
import { TestClock } from '../helpers/clock.ts';
import { callJson as call } from '../helpers/http.ts';
import { presenceOf, setPresence, type Presence } from '../helpers/presence.ts';
import { mcpClient, openSocket, serverSuite } from '../helpers/server-suite.ts';
import { postListing, repairIn, storeJson } from '../helpers/store.ts';
import { madeToken, revokeToken } from '../helpers/tokens.ts';
import { eventually } from '../helpers/turns.ts';

/**
 * Presence from each door (HTTP, socket.io, long-poll, MCP; the mail door in
 * test/email/mailgate-smtp.test.ts) and its end, on the service's clock moved by hand: online
 * while a connection is held or for 2 minutes after the last call, `last_seen_at` rounded down
 * to the minute, both hidden by `set_presence {visible: false}` in every view that shows them.
 */
const clock = new TestClock();
const test = serverSuite('presence: who is here now, and when each agent was last seen', () => ({
  extra: { clock },
  config: { clock },
}));

const MINUTE = 60_000;
const minuteOf = (ms: number) => new Date(Math.floor(ms / MINUTE) * MINUTE).toISOString();
const NEVER_SEEN: Presence = { online: false, last_seen_at: null, note: null };

test('an agent never seen since sign-up is offline with no last_seen_at: sign-up is not a call of its own', async ({
  server,
}) => {
  const agent = await server.signUp();
  assert.equal((await presenceOf(server, agent.agent_id)).presence, NEVER_SEEN);
});

test('a call at the HTTP door makes its agent online, seen in the minute of the call; 2 minutes on the service clock later it is offline, and last_seen_at stays', async ({
  server,
}) => {
  const agent = await server.signUp();
  clock.advance(25_000);
  const calledAt = clock.now();
  const me = await call<{ presence: Presence }>(server, 'GET', '/whoami', agent.api_token);
  assert.is(me.status, 200, JSON.stringify(me.body));
  assert.equal(me.body.presence, { online: true, last_seen_at: minuteOf(calledAt), note: null });
  const seen = { online: true, last_seen_at: minuteOf(calledAt), note: null };
  assert.equal((await presenceOf(server, agent.agent_id)).presence, seen);

  clock.advance(119_999);
  assert.equal((await presenceOf(server, agent.agent_id)).presence, seen, 'within the window');
  clock.advance(1);
  assert.equal(
    (await presenceOf(server, agent.agent_id)).presence,
    { online: false, last_seen_at: minuteOf(calledAt), note: null },
    'two minutes after its last call',
  );
  // Reading someone's profile, without a token, is not being seen.
  clock.advance(10 * MINUTE);
  assert.is((await presenceOf(server, agent.agent_id)).presence.last_seen_at, minuteOf(calledAt));
});

test('an open socket.io connection holds its agent online however long it stays quiet; its close is its last moment', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const socket = openSocket(context, agent.api_token);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  clock.advance(30 * MINUTE);
  const held = await presenceOf(server, agent.agent_id);
  assert.equal(held.presence, { online: true, last_seen_at: minuteOf(clock.now()), note: null });

  socket.disconnect();
  const tracker = server.services.presence!;
  await eventually('the service saw the socket close', async () =>
    tracker.here(agent.agent_id).held === 0 ? true : null,
  );
  const closedAt = clock.now();
  clock.advance(119_000);
  assert.is((await presenceOf(server, agent.agent_id)).presence.online, true, 'just closed');
  clock.advance(1_000);
  assert.equal((await presenceOf(server, agent.agent_id)).presence, {
    online: false,
    last_seen_at: minuteOf(closedAt),
    note: null,
  });
});

test("a socket its token's revoke disconnects lets go of its agent once: the agent's other socket still holds it online", async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const second = await madeToken(server, agent.api_token, { name: 'second socket' });
  const connected = (socket: Socket) =>
    new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('connect_error', reject);
    });
  const kept = openSocket(context, agent.api_token);
  const revoked = openSocket(context, second.api_token);
  await Promise.all([connected(kept), connected(revoked)]);
  const tracker = server.services.presence!;
  assert.is(tracker.here(agent.agent_id).held, 2);

  const ended = new Promise<void>((resolve) => revoked.once('disconnect', () => resolve()));
  assert.is((await revokeToken(server, agent.api_token, second.token_id)).status, 200);
  await ended;
  // The watch ends by the token, and the door stops it again as the socket closes: one release.
  await eventually('the service let go of the revoked socket', async () =>
    tracker.here(agent.agent_id).held < 2 ? true : null,
  );
  assert.is(tracker.here(agent.agent_id).held, 1);
  clock.advance(30 * MINUTE);
  assert.is((await presenceOf(server, agent.agent_id)).presence.online, true);
});

test('a parked long-poll holds its agent online while it waits, and its answer is its last moment', async ({
  server,
}) => {
  const agent = await server.signUp();
  // Its welcome read first: a wait with something unread answers at once.
  const welcome = await call<{ changes: unknown[] }>(server, 'GET', '/changes', agent.api_token);
  assert.is(welcome.body.changes.length, 1);
  clock.advance(5 * MINUTE);
  const parked = call<{ changes: unknown[] }>(
    server,
    'GET',
    '/changes/wait?timeout=60',
    agent.api_token,
  );
  const tracker = server.services.presence!;
  await eventually('the long-poll is parked', async () =>
    tracker.here(agent.agent_id).held === 1 ? true : null,
  );
  clock.advance(59_000);
  assert.equal((await presenceOf(server, agent.agent_id)).presence, {
    online: true,
    last_seen_at: minuteOf(clock.now()),
    note: null,
  });
  clock.advance(1_000);
  const answer = await parked;
  assert.is(answer.status, 200, 'its time-out answered');
  assert.equal(answer.body.changes, [], 'it waited: nothing came');
  const answeredAt = clock.now();
  assert.is(tracker.here(agent.agent_id).held, 0);
  clock.advance(120_000);
  assert.equal((await presenceOf(server, agent.agent_id)).presence, {
    online: false,
    last_seen_at: minuteOf(answeredAt),
    note: null,
  });
});

test('a call through MCP is a call like any other: its agent is online', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  clock.advance(10 * MINUTE);
  const client = await mcpClient(context, agent.api_token);
  const answer = await callTool(client, 'whoami');
  assert.not.ok(answer.isError, JSON.stringify(answer));
  assert.equal((await presenceOf(server, agent.agent_id)).presence, {
    online: true,
    last_seen_at: minuteOf(clock.now()),
    note: null,
  });
});

test('set_presence hides online and last_seen_at in the profile, the listing, the store, the agent card and the account; the note shows; online=1 never finds the hidden agent', async ({
  server,
}) => {
  const agent = await server.signUp();
  const posted = await postListing(server, agent, repairIn('Ghent'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const listingId = (posted.body as { listing_id: string }).listing_id;
  const online = await storeJson(server, '?online=1&limit=500');
  assert.ok(
    online.body.listings.some((l) => l.listing_id === listingId),
    'shown while visible',
  );

  const set = await setPresence(server, agent.api_token, { visible: false, note: 'back Monday' });
  assert.is(set.status, 200, JSON.stringify(set.body));
  assert.equal(set.body, { visible: false, note: 'back Monday' });
  const hidden: Presence = { online: null, last_seen_at: null, note: 'back Monday' };

  assert.equal((await presenceOf(server, agent.agent_id)).presence, hidden, 'the profile');
  const listing = await call<{ author: { presence: Presence } }>(
    server,
    'GET',
    `/listings/${listingId}`,
    null,
  );
  assert.equal(listing.body.author.presence, hidden, 'the listing');
  const store = await storeJson(server, '?limit=500');
  const inStore = store.body.listings.find((l) => l.listing_id === listingId);
  assert.equal(inStore?.author.presence, hidden, "the store's JSON");
  const onlineNow = await storeJson(server, '?online=1&limit=500');
  assert.not.ok(
    onlineNow.body.listings.some((l) => l.listing_id === listingId),
    'online=1',
  );
  const card = await call<{
    capabilities: { extensions: { uri: string; params: { presence?: Presence } }[] };
  }>(server, 'GET', `/agents/${agent.agent_id}/agent-card.json`, null);
  const extension = card.body.capabilities.extensions.find((e) => e.uri.endsWith('#presence'));
  assert.equal(extension?.params.presence, hidden, 'the agent card');
  const me = await call<{ presence: Presence }>(server, 'GET', '/whoami', agent.api_token);
  assert.equal(me.body.presence, hidden, 'the account');
  const markdown = await server.get('/store?limit=500');
  const text = await markdown.text();
  assert.match(
    text,
    /presence hidden; no knocks answered in 30 days; its note \(the author's words\): “back Monday”/,
  );

  // Shown again: the note stays until it is cleared.
  const shown = await setPresence(server, agent.api_token, { visible: true });
  assert.equal(shown.body, { visible: true, note: 'back Monday' });
  assert.is((await presenceOf(server, agent.agent_id)).presence.online, true);
  const cleared = await setPresence(server, agent.api_token, { note: '' });
  assert.equal(cleared.body, { visible: true, note: null });
});

test('set_presence refuses a note past 140 characters or of more than one line, and changes nothing', async ({
  server,
}) => {
  const agent = await server.signUp();
  await setPresence(server, agent.api_token, { note: 'here' });
  for (const note of ['x'.repeat(141), 'two\nlines', 'carriage\rreturn']) {
    const refused = await setPresence(server, agent.api_token, { note });
    assert.is(refused.status, 400, JSON.stringify(refused.body));
    assert.is((refused.body as unknown as { code: string }).code, 'invalid_input');
  }
  assert.is((await presenceOf(server, agent.agent_id)).presence.note, 'here');
  const unknown = await call(server, 'PUT', '/whoami/presence', agent.api_token, { online: true });
  assert.is(unknown.status, 400);
});

test.run();
