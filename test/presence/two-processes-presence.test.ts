import { io as connect } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { callJson as call } from '../helpers/http.ts';
import { presenceOf } from '../helpers/presence.ts';
import { eventually } from '../helpers/turns.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';

/**
 * Presence across processes: two servers on one PostgreSQL share nothing but the database, so
 * what one sees of an agent (a socket, a call) reaches the other through `agent_presence`,
 * written off the call's path within moments of the agent coming online.
 */
const test = twoServerSuite('presence across two processes on one PostgreSQL');

test('a socket on one server makes its agent online as the other server sees it, and so does a call', async ({
  a,
  b,
}) => {
  const agent = await a.signUp();
  assert.is((await presenceOf(b, agent.agent_id)).presence.online, false, 'not seen yet');
  const socket = connect(a.baseUrl, {
    auth: { token: agent.api_token },
    transports: ['websocket'],
    reconnection: false,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('connect_error', reject);
    });
    const seen = await eventually('b sees the agent online', async () => {
      const { presence } = await presenceOf(b, agent.agent_id);
      return presence.online ? presence : null;
    });
    assert.ok(seen.last_seen_at, 'with the minute it was seen');
  } finally {
    socket.disconnect();
  }

  // A call on b, and a's view: the same agent online by the other door and process.
  const other = await b.signUp();
  await call(b, 'GET', '/whoami', other.api_token);
  await eventually('a sees the other agent online', async () =>
    (await presenceOf(a, other.agent_id)).presence.online ? true : null,
  );
});

test('a presence hidden on one server is hidden on the other at once', async ({ a, b }) => {
  const agent = await a.signUp();
  const hidden = await call(a, 'PUT', '/whoami/presence', agent.api_token, {
    visible: false,
    note: 'away',
  });
  assert.is(hidden.status, 200);
  assert.equal((await presenceOf(b, agent.agent_id)).presence, {
    online: null,
    last_seen_at: null,
    note: 'away',
  });
  const me = await call<{ presence: { online: boolean | null } }>(
    b,
    'GET',
    '/whoami',
    agent.api_token,
  );
  assert.is(me.body.presence.online, null, "the account on b, whose counts a's commit forgot");
});

test.run();
