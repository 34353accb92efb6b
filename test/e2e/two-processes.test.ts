import { io as connect } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { twoServerSuite } from '../helpers/two-servers.ts';

// Two servers on one PostgreSQL stand for two processes: they share nothing but the database.
const test = twoServerSuite('two servers on one PostgreSQL wake each other');

test('a write on one server reaches a socket connected to the other', async ({ a, b }) => {
  const agent = await a.signUp();
  const socket = connect(a.baseUrl, {
    auth: { token: agent.api_token },
    transports: ['websocket'],
    reconnection: false,
  });
  try {
    const types: string[] = [];
    const arrived = new Promise<void>((resolve) =>
      socket.on('change', (event: { type: string }) => {
        types.push(event.type);
        if (event.type === 'feedback.received') resolve();
      }),
    );
    const sent = await b.post(
      '/feedback',
      { message: 'via b', category: 'other' },
      agent.api_token,
    );
    assert.is(sent.status, 202);
    await arrived;
    assert.equal(types, ['agent.welcome', 'feedback.received']);
  } finally {
    socket.disconnect();
  }
});

test('a long-poll on one server is woken by a write on the other', async ({ a, b }) => {
  const agent = await a.signUp();
  await a.get('/changes', agent.api_token);
  const waiting = a.get('/changes/wait?timeout=30', agent.api_token);
  for (let i = 0; i < 10_000 && a.services.hub.listenerCount(agent.agent_id) === 0; i++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.is(a.services.hub.listenerCount(agent.agent_id), 1, 'the long-poll parked on a first');
  await b.post('/feedback', { message: 'wake a', category: 'other' }, agent.api_token);
  const page = (await (await waiting).json()) as { changes: { type: string }[] };
  assert.is(page.changes[0]?.type, 'feedback.received');
});

test('a cursor issued by one server is taken by the other', async ({ a, b }) => {
  const agent = await a.signUp();
  await a.get('/whoami', agent.api_token);
  await b.post('/feedback', { message: 'x', category: 'other' }, agent.api_token);
  const fromB = (await (await b.get('/changes?after=c0', agent.api_token)).json()) as {
    cursor: string;
  };
  const onA = await a.get(`/changes?after=${fromB.cursor}`, agent.api_token);
  assert.is(onA.status, 200);
});

test.run();
