import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** A browser-based agent reaches the REST routes from its own page: CORS, bearer tokens only. */
const test = suite<{ server: TestServer }>('the REST routes from a web page');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

const origin = 'https://agent.example';

test("a preflight for an operation's path names its methods and the headers a page may send", async ({
  server,
}) => {
  const response = await fetch(server.url('/whoami'), {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'GET',
      'access-control-request-headers': 'authorization',
    },
  });
  assert.is(response.status, 204);
  assert.is(response.headers.get('access-control-allow-origin'), '*');
  assert.is(response.headers.get('access-control-allow-methods'), 'GET, HEAD, OPTIONS');
  assert.match(response.headers.get('access-control-allow-headers') ?? '', /authorization/);
});

test('answers and refusals alike are readable by the page, with their headers', async ({
  server,
}) => {
  const agent = await server.signUp();
  const ok = await fetch(server.url('/whoami'), {
    headers: { origin, authorization: `Bearer ${agent.api_token}` },
  });
  assert.is(ok.status, 200);
  assert.is(ok.headers.get('access-control-allow-origin'), '*');
  const refused = await fetch(server.url('/whoami'), { headers: { origin } });
  assert.is(refused.status, 401);
  assert.is(refused.headers.get('access-control-allow-origin'), '*');
  assert.match(refused.headers.get('access-control-expose-headers') ?? '', /www-authenticate/);
});

test('a path that does not exist is not turned into a preflight', async ({ server }) => {
  const response = await fetch(server.url('/no/such/path'), {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET' },
  });
  assert.is(response.status, 404);
});

test.run();
