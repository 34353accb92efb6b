import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The service's own address is a start: it answers the text of /llms.txt, no token needed. */
const test = suite<{ server: TestServer }>('the service address');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

test('GET / answers the text of /llms.txt, and /openapi.json describes it', async ({ server }) => {
  const root = await fetch(server.url('/'));
  const start = await fetch(server.url('/llms.txt'));
  assert.is(root.status, 200);
  assert.is(root.headers.get('content-type'), start.headers.get('content-type'));
  assert.is(await root.text(), await start.text());
  const openApi = (await (await fetch(server.url('/openapi.json'))).json()) as {
    paths: Record<string, { get?: unknown }>;
  };
  assert.ok(openApi.paths['/']?.get, '/ is described');
});

test.run();
