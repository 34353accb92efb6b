import { io as connect, type Socket } from 'socket.io-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestClock } from '../helpers/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { turnsUntil } from '../helpers/turns.ts';

interface Event {
  event_id: string;
  cursor: string;
  type: string;
  data: Record<string, unknown>;
}
interface Page {
  changes: Event[];
  cursor: string;
}

const test = suite<{ server: TestServer; sockets: Socket[]; clock: TestClock }>(
  'the changes feed: long-poll and socket.io',
);

test.before(async (context) => {
  // Long-poll time-outs run on this clock: the test moves it, nothing waits for real time.
  context.clock = new TestClock();
  context.server = await startTestServer({ clock: context.clock });
  context.sockets = [];
});
test.after.each(({ sockets }) => {
  for (const socket of sockets.splice(0)) socket.disconnect();
});
test.after(async ({ server }) => {
  await server.close();
});

function open(
  context: { server: TestServer; sockets: Socket[] },
  auth: Record<string, unknown>,
  transports: ('websocket' | 'polling')[] = ['websocket'],
): Socket {
  const socket = connect(context.server.baseUrl, { auth, transports, reconnection: false });
  context.sockets.push(socket);
  return socket;
}

/** Collects `change` events until `count` have come. */
function nextChanges(socket: Socket, count: number): Promise<Event[]> {
  return new Promise((resolve) => {
    const seen: Event[] = [];
    const listener = (event: Event) => {
      seen.push(event);
      if (seen.length === count) {
        socket.off('change', listener);
        resolve(seen);
      }
    };
    socket.on('change', listener);
  });
}

const feedback = (server: TestServer, token: string, message = 'ping') =>
  server.post('/feedback', { message, category: 'other' }, token);

test('a long-poll waiter is woken at once by a new change', async ({ server }) => {
  const agent = await server.signUp();
  await server.get('/changes', agent.api_token);
  const waiting = server.get('/changes/wait?timeout=30', agent.api_token);
  // The write comes only once the long-poll is parked, so this tests the wake-up itself.
  await turnsUntil(() => server.services.hub.listenerCount(agent.agent_id) === 1);
  const sent = await feedback(server, agent.api_token);
  assert.is(sent.status, 202);
  const page = (await (await waiting).json()) as Page;
  assert.is(page.changes.length, 1);
  assert.is(page.changes[0]?.type, 'feedback.received');
});

test('a long-poll whose client goes away stops listening', async ({ server }) => {
  const agent = await server.signUp();
  await server.get('/changes', agent.api_token);
  const client = new AbortController();
  const waiting = fetch(server.url('/changes/wait?timeout=60'), {
    headers: { authorization: `Bearer ${agent.api_token}` },
    signal: client.signal,
  }).catch(() => 'aborted');
  await turnsUntil(() => server.services.hub.listenerCount(agent.agent_id) === 1);
  client.abort();
  assert.is(await waiting, 'aborted');
  await turnsUntil(() => server.services.hub.listenerCount(agent.agent_id) === 0);
});

test('a long-poll answers at once when something is already new', async ({ server }) => {
  const agent = await server.signUp();
  const page = (await (await server.get('/changes/wait', agent.api_token)).json()) as Page;
  assert.is(page.changes[0]?.type, 'agent.welcome');
});

test('a long-poll that times out answers an empty list with the same cursor', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const first = (await (await server.get('/changes', agent.api_token)).json()) as Page;
  let answered = false;
  const waiting = server.get('/changes/wait?timeout=1', agent.api_token).then((response) => {
    answered = true;
    return response;
  });
  await turnsUntil(() => server.services.hub.listenerCount(agent.agent_id) === 1);
  clock.advance(999);
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.not.ok(answered, 'still waiting 1 ms before its time-out');
  clock.advance(1);
  const page = (await (await waiting).json()) as Page;
  assert.equal(page, { changes: [], cursor: first.cursor });
});

test('reading after a cursor resumes there and never repeats an event', async ({ server }) => {
  const agent = await server.signUp();
  await feedback(server, agent.api_token, 'one');
  await feedback(server, agent.api_token, 'two');
  const all = (await (await server.get('/changes?limit=2', agent.api_token)).json()) as Page;
  assert.is(all.changes.length, 2);
  const rest = (await (await server.get('/changes', agent.api_token)).json()) as Page;
  assert.is(rest.changes.length, 1);
  const resumed = (await (
    await server.get(`/changes?after=${all.changes[0]?.cursor}`, agent.api_token)
  ).json()) as Page;
  assert.equal(
    resumed.changes.map((e) => e.event_id),
    [all.changes[1]?.event_id, rest.changes[0]?.event_id],
  );
  const ids = [...all.changes, ...rest.changes].map((e) => e.event_id);
  assert.is(new Set(ids).size, 3);
});

test('socket.io replays what is unread, then pushes new changes live', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const socket = open(context, { token: agent.api_token });
  const [welcome] = await nextChanges(socket, 1);
  assert.is(welcome?.type, 'agent.welcome');
  const live = nextChanges(socket, 1);
  await feedback(server, agent.api_token);
  const [pushed] = await live;
  assert.is(pushed?.type, 'feedback.received');
});

test('a socket of an agent that has read everything connects without reading the database, and gets the next change live', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const first = open(context, { token: agent.api_token });
  const [welcome] = await nextChanges(first, 1);
  await first.emitWithAck('ack', { cursor: welcome?.cursor });
  first.disconnect();
  const { driver } = server.services;
  // What GET /health costs the database alone: it takes its turn after anything asked before.
  let before = driver.roundTrips();
  await (await server.get('/health')).arrayBuffer();
  const healthCost = driver.roundTrips() - before;
  before = driver.roundTrips();
  const second = open(context, { token: agent.api_token });
  await new Promise<void>((resolve) => second.once('connect', () => resolve()));
  await (await server.get('/health')).arrayBuffer();
  assert.is(driver.roundTrips() - before, healthCost, 'the connection read nothing');
  const live = nextChanges(second, 1);
  await feedback(server, agent.api_token);
  assert.is((await live)[0]?.type, 'feedback.received');
});

test('socket.io over HTTP long-polling (no WebSocket) gets the same events', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const socket = open(context, { token: agent.api_token }, ['polling']);
  const [welcome] = await nextChanges(socket, 1);
  assert.is(welcome?.type, 'agent.welcome');
  const live = nextChanges(socket, 1);
  await feedback(server, agent.api_token);
  assert.is((await live)[0]?.type, 'feedback.received');
});

test('socket.io with a cursor replays only what came after it', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const page = (await (await server.get('/changes', agent.api_token)).json()) as Page;
  await feedback(server, agent.api_token);
  const socket = open(context, { token: agent.api_token, cursor: page.cursor });
  const [first] = await nextChanges(socket, 1);
  assert.is(first?.type, 'feedback.received');
});

test('socket.io events match what the HTTP feed returns, event for event', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const socket = open(context, { token: agent.api_token });
  const pushed = nextChanges(socket, 4);
  for (const message of ['a', 'b', 'c']) await feedback(server, agent.api_token, message);
  const viaSocket = await pushed;
  const viaHttp = (await (await server.get('/changes', agent.api_token)).json()) as Page;
  assert.equal(viaSocket, viaHttp.changes);
});

test('socket.io refuses a bad token with data.code unauthorized', async (context) => {
  const socket = open(context, { token: 'asvc_nope' });
  const error = await new Promise<Error & { data?: { code?: string } }>((resolve) =>
    socket.on('connect_error', resolve),
  );
  assert.is(error.data?.code, 'unauthorized');
});

test('socket.io refuses a malformed cursor with data.code invalid_cursor', async (context) => {
  const agent = await context.server.signUp();
  const socket = open(context, { token: agent.api_token, cursor: 'not-a-cursor' });
  const error = await new Promise<Error & { data?: { code?: string } }>((resolve) =>
    socket.on('connect_error', resolve),
  );
  assert.is(error.data?.code, 'invalid_cursor');
});

test('ack over socket.io moves the remembered place', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const socket = open(context, { token: agent.api_token });
  const [welcome] = await nextChanges(socket, 1);
  const answer = (await socket.emitWithAck('ack', { cursor: welcome?.cursor })) as {
    cursor: string;
  };
  assert.is(answer.cursor, welcome?.cursor);
  const me = (await (await server.get('/whoami', agent.api_token)).json()) as {
    unread: { changes: number };
  };
  assert.is(me.unread.changes, 0);
});

test('an ack with a cursor not issued to the agent is answered with invalid_cursor', async (context) => {
  const agent = await context.server.signUp();
  const socket = open(context, { token: agent.api_token });
  await nextChanges(socket, 1);
  const answer = (await socket.emitWithAck('ack', { cursor: 'c999' })) as {
    error?: { code: string };
  };
  assert.is(answer.error?.code, 'invalid_cursor');
  const missing = (await socket.emitWithAck('ack', null)) as { error?: { code: string } };
  assert.is(missing.error?.code, 'invalid_cursor');
});

test.run();
