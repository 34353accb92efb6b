import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enginesHere } from '../helpers/engines.ts';
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

/** A page's preflight for `method` with `header` is answered: any origin, `methods`, the header. */
async function assertPreflight(url: string, method: string, header: string, methods: string) {
  const response = await fetch(url, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': header,
    },
  });
  assert.is(response.status, 204);
  assert.is(response.headers.get('access-control-allow-origin'), '*');
  assert.is(response.headers.get('access-control-allow-methods'), methods);
  assert.match(response.headers.get('access-control-allow-headers') ?? '', header);
}

test("a preflight for an operation's path names its methods and the headers a page may send", async ({
  server,
}) => {
  await assertPreflight(server.url('/whoami'), 'GET', 'authorization', 'GET, HEAD, OPTIONS');
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

/**
 * socket.io's polling transport from a page: socket.io-client in a browser opens with it
 * (GET and POST, text/plain), then upgrades. Its answers carry the CORS headers, and a
 * preflight (a page that sends a header of its own) is answered, on either engine.
 */
for (const engine of enginesHere(import.meta.filename)) {
  const sockets = suite<{ server: TestServer }>(
    `socket.io's polling transport from a web page (${engine})`,
  );

  sockets.before(async (context) => {
    context.server = await startTestServer({ httpEngine: engine });
  });
  sockets.after(async ({ server }) => {
    await server.close();
  });

  sockets(
    'a preflight under /socket.io/ is answered with the methods polling uses',
    async ({ server }) => {
      const polling = server.url('/socket.io/?EIO=4&transport=polling');
      await assertPreflight(polling, 'POST', 'content-type', 'GET, POST, OPTIONS');
    },
  );

  sockets(
    'the handshake, the connect and the events of polling are readable by the page',
    async ({ server }) => {
      const agent = await server.signUp();
      const polling = server.url('/socket.io/?EIO=4&transport=polling');
      const opened = await fetch(polling, { headers: { origin } });
      assert.is(opened.status, 200);
      assert.is(opened.headers.get('access-control-allow-origin'), '*');
      const handshake = await opened.text();
      assert.ok(handshake.startsWith('0{'), handshake);
      const { sid } = JSON.parse(handshake.slice(1)) as { sid: string };
      const sent = await fetch(`${polling}&sid=${sid}`, {
        method: 'POST',
        headers: { origin, 'content-type': 'text/plain;charset=UTF-8' },
        body: `40${JSON.stringify({ token: agent.api_token })}`,
      });
      assert.is(sent.status, 200);
      assert.is(sent.headers.get('access-control-allow-origin'), '*');
      const received = await fetch(`${polling}&sid=${sid}`, { headers: { origin } });
      assert.is(received.headers.get('access-control-allow-origin'), '*');
      assert.match(await received.text(), /^40\{"sid"/);
    },
  );

  sockets.run();
}
