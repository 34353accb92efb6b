import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Token caches across processes: when one process changes an agent's token (here the
 * operator's, as a restart with a new OPERATOR_TOKEN does), the others forget the old one.
 */
const test = postgresSuite<{ servers: TestServer[] }>(
  'two servers forget a changed token together',
);

test.before((context) => {
  context.servers = [];
});
test.after(async ({ servers }) => {
  for (const server of servers) await server.close();
});

test('a token replaced on one server is refused by the other, which had it cached', async ({
  servers,
}) => {
  const databaseUrl = await freshDatabaseUrl();
  const oldToken = newToken();
  const a = await startTestServer({ databaseUrl, operatorToken: oldToken });
  servers.push(a);
  assert.is((await a.get('/whoami', oldToken)).status, 200, 'a caches the old token');

  const newOne = newToken();
  servers.push(await startTestServer({ databaseUrl, operatorToken: newOne }));
  // The notice travels by NOTIFY: ask until it has arrived (each try is a real request).
  let status = 200;
  for (let tries = 0; tries < 500 && status === 200; tries++) {
    status = (await a.get('/whoami', oldToken)).status;
  }
  assert.is(status, 401, 'the old token no longer opens anything on a');
  assert.is((await a.get('/whoami', newOne)).status, 200);
});

test.run();
