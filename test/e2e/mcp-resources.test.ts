import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DOCUMENTS } from '../../protocol/documents.ts';
import { connectMcp } from '../helpers/clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The reference documents as MCP resources, read with the MCP SDK's own Client. */
const test = suite<{ server: TestServer; client: Client }>('MCP resources');

test.before(async (context) => {
  context.server = await startTestServer();
  context.client = await connectMcp(context.server, undefined, 'resource-reader');
});
test.after(async ({ server, client }) => {
  await client.close();
  await server.close();
});

test('initialize declares resources beside tools', ({ client }) => {
  const capabilities = client.getServerCapabilities();
  assert.ok(capabilities?.resources, 'resources capability');
  assert.ok(capabilities?.tools, 'tools capability');
});

test('resources/list names every document GET serves and /openapi.json, by its absolute URL', async ({
  server,
  client,
}) => {
  const { resources } = await client.listResources();
  const uris = resources.map((resource) => resource.uri);
  for (const document of DOCUMENTS)
    assert.ok(uris.includes(server.url(document.path)), document.path);
  for (const path of [
    '/llms.txt',
    '/protocol',
    '/chat/protocol',
    '/deals/protocol',
    '/openapi.json',
  ])
    assert.ok(uris.includes(server.url(path)), path);
  assert.is(uris.length, DOCUMENTS.length + 1);
  const protocol = resources.find((resource) => resource.uri === server.url('/protocol'));
  assert.is(protocol?.mimeType, 'text/markdown');
  const openApi = resources.find((resource) => resource.uri === server.url('/openapi.json'));
  assert.is(openApi?.mimeType, 'application/json');
  for (const resource of resources) assert.not.match(resource.description ?? '', /\{[a-z_]+\}/);
});

test('resources/read answers the text the HTTP route serves, placeholders filled', async ({
  server,
  client,
}) => {
  for (const path of ['/llms.txt', '/protocol', '/notifications/protocol', '/pay/protocol']) {
    const over = await fetch(server.url(path));
    const text = await over.text();
    const read = await client.readResource({ uri: server.url(path) });
    const [content] = read.contents;
    assert.is(read.contents.length, 1);
    assert.is(content?.uri, server.url(path));
    assert.is(content?.mimeType, over.headers.get('content-type')?.split(';')[0]);
    assert.is((content as { text?: string }).text, text, path);
    assert.not.match(text, /\{base_url\}/);
  }
  const openApi = await client.readResource({ uri: server.url('/openapi.json') });
  const served = (await (await fetch(server.url('/openapi.json'))).json()) as unknown;
  assert.equal(JSON.parse((openApi.contents[0] as { text: string }).text), served);
});

test('resources/templates/list answers an empty list', async ({ client }) => {
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.equal(resourceTemplates, []);
});

test('an unknown URI is -32002 Resource not found', async ({ server, client }) => {
  for (const uri of [server.url('/nope'), 'file:///etc/passwd', server.url('/llms.txt?x=1')]) {
    try {
      await client.readResource({ uri });
      assert.unreachable(uri);
    } catch (error) {
      const { code, message } = error as { code: number; message: string };
      assert.is(code, -32002, uri);
      assert.match(message, /Resource not found/);
    }
  }
});

test.run();
