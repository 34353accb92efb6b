import type { Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import type { Driver } from '../../storage/driver.ts';
import { connectSocket } from '../helpers/clients.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';

/**
 * Sockets of one agent replaying from one place at once (a crowd reconnecting after a restart)
 * share one read of the feed (actors/feed/feed.ts, visibleChangesAfter), and a change committed
 * while that read is out still reaches every socket, once.
 */
const test = serverSuite('the feed: replays read at once by one agent’s sockets');

interface Event {
  cursor: string;
  type: string;
}

/**
 * Holds the answer of the first replay read of `agentId`'s feed until `release` is called;
 * counts every replay read of it.
 */
function holdFirstReplay(server: TestServer, agentId: string) {
  const driver = server.services.driver as Driver & { query: Driver['query'] };
  const query = driver.query;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const state = { reads: 0 };
  driver.query = (async (text: string, params?: unknown[]) => {
    const replay = /from changes c left join change_payloads/.test(text) && params?.[0] === agentId;
    if (replay) state.reads++;
    const rows = await query.call(driver, text, params);
    if (replay && state.reads === 1) await released;
    return rows;
  }) as Driver['query'];
  return {
    state,
    release: () => release(),
    restore: () => {
      release();
      driver.query = query;
    },
  };
}

const connected = (socket: Socket) =>
  new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });

/** The events `socket` receives until one of `type` (included). */
function eventsUntil(socket: Socket, type: string): Promise<Event[]> {
  return new Promise((resolve) => {
    const seen: Event[] = [];
    const listener = (event: Event) => {
      seen.push(event);
      if (event.type !== type) return;
      socket.off('change', listener);
      resolve(seen);
    };
    socket.on('change', listener);
  });
}

test('twenty sockets of one agent connecting at once from its place read its feed once', async ({
  server,
  sockets,
}) => {
  const agent = await server.signUp('crowd replaying');
  const held = holdFirstReplay(server, agent.agent_id);
  try {
    const crowd = Array.from({ length: 20 }, () => connectSocket(server, agent.api_token));
    sockets.push(...crowd);
    const welcomes = crowd.map((socket) => eventsUntil(socket, 'agent.welcome'));
    // Each socket asked for its replay before its client heard `connect`.
    await Promise.all(crowd.map(connected));
    held.release();
    const replayed = await Promise.all(welcomes);
    assert.ok(replayed.every((events) => events.length === 1));
    assert.is(held.state.reads, 1, 'one read for the twenty sockets');
  } finally {
    held.restore();
  }
});

test('a change committed while a shared replay is out reaches a socket that asks after it, and the one that asked before', async ({
  server,
  sockets,
}) => {
  const agent = await server.signUp('replaying while a change commits');
  const held = holdFirstReplay(server, agent.agent_id);
  try {
    const first = connectSocket(server, agent.api_token);
    sockets.push(first);
    const firstHears = eventsUntil(first, 'feedback.received');
    await connected(first);
    // Committed (and signalled) while the first socket's replay is still out.
    const sent = await server.post(
      '/feedback',
      { message: 'while a replay is out', category: 'other' },
      agent.api_token,
    );
    assert.is(sent.status, 202, await sent.text());
    const second = connectSocket(server, agent.api_token);
    sockets.push(second);
    const secondHears = eventsUntil(second, 'feedback.received');
    await connected(second);
    held.release();
    const [heardFirst, heardSecond] = await Promise.all([firstHears, secondHears]);
    for (const heard of [heardFirst, heardSecond]) {
      assert.equal(
        heard.map((event) => event.type),
        ['agent.welcome', 'feedback.received'],
      );
    }
    assert.equal(heardSecond, heardFirst, 'the same events, once each, in order');
    assert.is(held.state.reads >= 2, true, 'the second socket read for itself');
  } finally {
    held.restore();
  }
});

test.run();
