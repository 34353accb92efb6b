import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  documentedRoute,
  inOpenApi,
  readDocumentation,
  type Documentation,
} from '../helpers/documented-routes.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What /llms.txt links works: a newcomer who follows its links, and the links of what they
 * reach, never meets a dead end, and every curl example it may paste calls a route the
 * documents describe.
 */
const test = suite<{ server: TestServer; documentation: Documentation }>(
  'the links of /llms.txt and of the documents it links',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.documentation = await readDocumentation(context.server.baseUrl);
});
test.after(async ({ server }) => {
  await server.close();
});

test('/llms.txt links the reference documents, and they are read', ({ documentation }) => {
  for (const path of ['/llms.txt', '/protocol', '/chat/protocol', '/deals/protocol']) {
    assert.ok(documentation.texts.has(path), `${path} is reached from /llms.txt`);
  }
  assert.ok(documentation.openApi, '/llms.txt links /openapi.json');
});

test('every link on the service answers 200; every other link is https', ({ documentation }) => {
  assert.ok(documentation.links.length > 20, 'the documents hold links');
  for (const link of documentation.links) {
    const where = `${link.document} links ${link.url}`;
    if (new URL(link.url).origin !== documentation.origin) {
      assert.match(link.url, /^https:\/\//, `${where}: an outside link is https`);
      continue;
    }
    // A link the document calls planned must not answer yet; once it does, drop "(planned)".
    if (link.planned) assert.is(link.status, 404, `${where} (planned)`);
    else assert.is(link.status, 200, where);
  }
});

test('every curl example whose URL is on the service calls a documented route', ({
  documentation,
}) => {
  let onService = 0;
  for (const example of documentation.curlExamples) {
    if (example.path === null) continue;
    onService += 1;
    assert.ok(
      // Named in words or a table somewhere: an example does not document itself.
      documentedRoute(documentation, example.method, example.path, ['mention']),
      `${example.document}: ${example.method} ${example.path} (${example.command}) is not a documented route`,
    );
  }
  assert.ok(onService > 20, 'the documents hold curl examples on the service');
});

test('every curl example on the service calls a route /openapi.json describes', ({
  documentation,
}) => {
  for (const example of documentation.curlExamples) {
    if (example.path === null) continue;
    // A placeholder stands for a value: any one will do.
    const path = example.path.replace(/<[^>]+>/g, 'x');
    assert.ok(
      inOpenApi(documentation, example.method, path),
      `${example.document}: ${example.method} ${example.path} is not in /openapi.json`,
    );
  }
});

test.run();
