import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ server: TestServer }>('actor eviction under a small cap');

test.before(async (context) => {
  context.server = await startTestServer({ actorCapacity: 2 });
});
test.after(async ({ server }) => {
  await server.close();
});

test('with room for two live agents, ten agents still read, write and keep their place', async ({
  server,
}) => {
  const agents = [];
  for (let i = 0; i < 10; i++) agents.push(await server.signUp());
  for (const agent of agents) {
    await server.get('/changes', agent.api_token);
    await server.post('/feedback', { message: 'hi', category: 'other' }, agent.api_token);
  }
  assert.ok(server.services.agents.size <= 2);
  for (const agent of agents) {
    const me = (await (await server.get('/whoami', agent.api_token)).json()) as {
      unread: { changes: number };
    };
    assert.is(me.unread.changes, 1, 'the welcome was read; the feedback receipt is unread');
    const page = (await (await server.get('/changes', agent.api_token)).json()) as {
      changes: { type: string }[];
    };
    assert.equal(
      page.changes.map((c) => c.type),
      ['feedback.received'],
    );
  }
});

test.run();
