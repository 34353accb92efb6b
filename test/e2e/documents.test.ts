import { Validator } from '@seriousme/openapi-schema-validator';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { DOCUMENTS, DOWNLOADS } from '../../protocol/documents.ts';
import { ERRORS } from '../../protocol/errors.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ server: TestServer }>('reference documents and /openapi.json');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

test('/openapi.json is a valid OpenAPI 3.1 document', async ({ server }) => {
  const response = await server.get('/openapi.json');
  assert.is(response.status, 200);
  const document = (await response.json()) as { openapi: string };
  assert.is(document.openapi, '3.1.0');
  const result = await new Validator().validate(document as never);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
});

test('/openapi.json describes every public operation of the table under its route and method, and no operator-only one', async ({
  server,
}) => {
  const document = (await (await server.get('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  for (const operation of OPERATION_LIST) {
    const path = operation.path.replace(/[:*]([a-z_]+)/g, '{$1}');
    const entry = document.paths[path]?.[operation.method.toLowerCase()];
    if (operation.operatorOnly) {
      assert.not.ok(entry, `${operation.name} is operator-only: no one else may learn of it`);
      continue;
    }
    assert.ok(entry, `${operation.name} is missing from /openapi.json`);
    assert.is(entry.operationId, operation.name);
  }
});

test('every reference document is served without a token, filled in', async ({ server }) => {
  for (const document of DOCUMENTS) {
    const response = await server.get(document.path);
    assert.is(response.status, 200, document.path);
    assert.is(response.headers.get('content-type'), document.contentType);
    const text = await response.text();
    assert.ok(text.length > 200, `${document.path} has content`);
    assert.not.match(
      text,
      /\{(base_url|terms_url|privacy_url|operator_name|mail_join_address|service_version)\}/,
    );
    for (const page of ['/terms', '/privacy']) {
      if (document.path !== page)
        assert.ok(text.includes(`${server.baseUrl}${page}`), `${document.path} points to ${page}`);
    }
  }
});

test('every download is served without a token, byte for byte as committed, with its type, and /openapi.json lists it', async ({
  server,
}) => {
  const document = (await (await server.get('/openapi.json')).json()) as {
    paths: Record<string, { get?: unknown }>;
  };
  for (const download of DOWNLOADS) {
    const response = await server.get(download.path);
    assert.is(response.status, 200, download.path);
    assert.is(response.headers.get('content-type'), download.contentType, download.path);
    const committed = readFileSync(
      new URL(`../../protocol/documents/${download.file}`, import.meta.url),
    );
    assert.ok(Buffer.from(await response.arrayBuffer()).equals(committed), download.path);
    assert.ok(document.paths[download.path]?.get, `${download.path} is in /openapi.json`);
  }
});

test('/protocol has an anchor for every error code that problem types link to', async ({
  server,
}) => {
  const text = await (await server.get('/protocol')).text();
  for (const code of Object.keys(ERRORS)) assert.ok(text.includes(`id="error-${code}"`), code);
});

test('/llms.txt and /protocol name every operation an agent can call today', async ({ server }) => {
  const llms = await (await server.get('/llms.txt')).text();
  const protocol = await (await server.get('/protocol')).text();
  for (const operation of OPERATION_LIST) {
    assert.ok(protocol.includes(`\`${operation.name}\``), `/protocol names ${operation.name}`);
    if (!operation.operatorOnly) {
      // The documents write path parameters as `<name>`.
      const shown = operation.path.replace(/[:*]([a-z_]+)/g, '<$1>');
      assert.ok(llms.includes(shown), `/llms.txt shows ${shown}`);
    }
  }
});

test.run();
