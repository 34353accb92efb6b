import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { contentTypeOf } from '../../actors/files/content-type.ts';
import { takesIdempotencyKey } from '../../protocol/operation.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { send } from '../helpers/transport.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * /openapi.json says what the service really answers (issue 19, item 16): its own entry, the
 * content types of read_file, /health's 503, schema patterns every regex dialect reads, /mcp,
 * the storage-link calls and the receipt keys, HEAD beside every GET, and `Idempotency-Key` on
 * exactly the writes that honour it. Each claim is checked against a real answer.
 */
interface Parameter {
  name: string;
  in: string;
  description?: string;
}
interface Response {
  description: string;
  content?: Record<string, { schema: Record<string, unknown> }>;
  headers?: Record<string, unknown>;
}
interface Entry {
  operationId: string;
  parameters?: Parameter[];
  responses: Record<string, Response>;
  requestBody?: { content: Record<string, unknown> };
}
type PathItem = Record<string, Entry> & { parameters?: Parameter[] };
interface Document {
  paths: Record<string, PathItem>;
}

const test = suite<{ server: TestServer; document: Document }>('what /openapi.json describes');

test.before(async (context) => {
  context.server = await startTestServer();
  const response = await context.server.get('/openapi.json');
  context.document = (await response.json()) as Document;
});
test.after(async ({ server }) => {
  await server.close();
});

/** The entry of `operationId` wherever it is. */
function entryOf(document: Document, operationId: string): Entry {
  for (const item of Object.values(document.paths)) {
    for (const entry of Object.values(item)) {
      if (!Array.isArray(entry) && entry.operationId === operationId) return entry;
    }
  }
  throw new Error(`${operationId} is not in /openapi.json`);
}

/** Every `pattern` in the document with where it is. */
function patterns(node: unknown, at = ''): [string, string][] {
  if (Array.isArray(node)) return node.flatMap((item, index) => patterns(item, `${at}/${index}`));
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([key, value]) =>
    key === 'pattern' && typeof value === 'string'
      ? [[value, at] as [string, string]]
      : patterns(value, `${at}/${key}`),
  );
}

test("/openapi.json's own entry describes the JSON object it sends", async ({
  server,
  document,
}) => {
  const ok = entryOf(document, 'document_openapi_json').responses['200'];
  assert.equal(Object.keys(ok?.content ?? {}), ['application/json']);
  assert.is(ok?.content?.['application/json']?.schema.type, 'object');
  const response = await server.get('/openapi.json');
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await response.json()) as Record<string, unknown>;
  for (const field of (ok?.content?.['application/json']?.schema.required as string[]) ?? [])
    assert.ok(field in body, `the document has \`${field}\``);
});

test('read_file lists every content type a file is served with, by extension', async ({
  server,
  document,
}) => {
  const listed = Object.keys(entryOf(document, 'read_file').responses['200']?.content ?? {});
  // Every extension content-type.ts names, and one it does not.
  const source = readFileSync(
    new URL('../../actors/files/content-type.ts', import.meta.url),
    'utf8',
  );
  const extensions = [...source.matchAll(/case '([a-z0-9]+)':/g)].map((match) => match[1]);
  assert.ok(extensions.length >= 10, 'the extensions were found');
  for (const extension of [...extensions, 'unknownkind']) {
    const served = contentTypeOf(`file.${extension}`).split(';')[0] as string;
    assert.ok(listed.includes(served), `.${extension} is served as ${served}, not listed`);
  }
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  await saveFile(server, agent, workspaceId, 'notes/readme.md', '# Hello\n');
  const read = await server.get(
    `/workspaces/${workspaceId}/files/notes/readme.md`,
    agent.api_token,
  );
  assert.is(read.status, 200);
  assert.ok(listed.includes((read.headers.get('content-type') ?? '').split(';')[0] as string));
  assert.match(
    OPERATION_LIST.find((operation) => operation.name === 'read_file')?.description ?? '',
    /`\.md` `text\/markdown/,
    'the description states the rule',
  );
});

test('/health documents its 503 and the body it then sends', ({ document }) => {
  const health = entryOf(document, 'health');
  const degraded = health.responses['503'];
  assert.ok(degraded, '503 is documented');
  const schema = degraded.content?.['application/json']?.schema as {
    required: string[];
    properties: Record<string, { const?: string }>;
  };
  assert.equal(schema.required.sort(), ['database', 'service_version', 'status']);
  assert.is(schema.properties.status?.const, 'degraded');
  assert.is(schema.properties.database?.const, 'unreachable');
  assert.ok(degraded.headers?.['retry-after'], 'Retry-After is documented');
  assert.ok(degraded.content?.['application/problem+json'], 'starting or stopping: a problem');
  // The 200 still matches what is sent now (the 503 itself: openapi-health.test.ts).
});

test('every pattern in the document is one every regex dialect reads', ({ document }) => {
  const found = patterns(document);
  assert.ok(found.length > 10, 'patterns were found');
  for (const [pattern, at] of found) {
    // JavaScript-only syntax: Unicode classes, code point escapes, lookbehind and named groups,
    // named back-references, \u escapes (Go's RE2 has none).
    assert.not.match(pattern, /\\[pP]\{|\\u\{|\(\?<|\\k<|\\u[0-9a-fA-F]{4}/, `${at}: ${pattern}`);
    // It compiles with and without JavaScript's Unicode mode: it relies on neither.
    new RegExp(pattern);
    new RegExp(pattern, 'u');
  }
  const name = (
    entryOf(document, 'sign_up').requestBody?.content['application/json'] as {
      schema: { properties: Record<string, { pattern?: string; description?: string }> };
    }
  ).schema.properties.name;
  // The name rule needs \p{L}: the pattern is exact over ASCII, the rest is said in words.
  const portable = new RegExp(name?.pattern ?? '');
  for (let code = 0; code < 0x80; code++) {
    const char = String.fromCharCode(code);
    assert.is(portable.test(char), /^[A-Za-z0-9 ._-]$/.test(char), `U+${code.toString(16)}`);
  }
  for (const text of ['Zoë Müller', 'Ωmega', 'a\u0085b']) {
    assert.is(portable.test(text), text !== 'a\u0085b', JSON.stringify(text));
  }
  assert.match(name?.description ?? '', /letters, digits, spaces/);
  assert.match(name?.description ?? '', /beyond ASCII/);
});

test('the name rule is still checked by the service, and MCP tool schemas are portable too', async ({
  server,
}) => {
  assert.is((await server.post('/agents', { name: 'Zoë Müller' })).status, 201);
  const refused = await server.post('/agents', { name: 'semi;colon' });
  assert.is(refused.status, 400);
  assert.is(((await refused.json()) as { code: string }).code, 'invalid_input');
  const listed = await fetch(server.url('/mcp'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  const tools = ((await listed.json()) as { result: { tools: unknown[] } }).result.tools;
  for (const [pattern, at] of patterns(tools))
    assert.not.match(pattern, /\\[pP]\{|\\u\{|\(\?<|\\k<|\\u[0-9a-fA-F]{4}/, `${at}: ${pattern}`);
});

test('/mcp is described with its media types and session header, and answers as described', async ({
  server,
  document,
}) => {
  const mcp = document.paths['/mcp'];
  assert.ok(mcp?.post && mcp.get && mcp.delete, 'POST, GET and DELETE /mcp are described');
  assert.ok(mcp.post.requestBody?.content['application/json']);
  assert.ok(mcp.post.responses['200']?.content?.['application/json']);
  assert.ok(mcp.post.parameters?.some((p) => p.name === 'mcp-session-id' && p.in === 'header'));
  assert.ok(mcp.get.responses['405'], 'GET: 405');
  const get = await send(server, 'GET', '/mcp', { headers: { accept: 'text/event-stream' } });
  assert.is(get.status, 405);
  assert.is(get.headers['mcp-session-id'], undefined, 'no session is issued');
  const initialize = await fetch(server.url('/mcp'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'openapi-test', version: '1' },
      },
    }),
  });
  assert.is(initialize.status, 200);
  assert.match(initialize.headers.get('content-type') ?? '', /^application\/json/);
  assert.is(initialize.headers.get('mcp-session-id'), null, 'stateless: no session id');
});

test('the storage-link calls are described with the SAS query a real link carries', async ({
  server,
  document,
}) => {
  const file = document.paths['/blob/{workspace_id}/{path}'];
  const container = document.paths['/blob/{workspace_id}'];
  assert.ok(file?.put && file.get && file.head, 'Put Blob/Block/Block List, Get Blob, Properties');
  assert.ok(container?.get, 'List Blobs');
  const documented = (file.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const link = (await (
    await server.post(`/workspaces/${workspaceId}/sas`, { access: 'read' }, agent.api_token)
  ).json()) as { container_url: string; sas_token: string };
  for (const name of new URLSearchParams(link.sas_token).keys())
    assert.ok(documented.includes(name), `the SAS field ${name} is described`);
  assert.ok(link.container_url.endsWith(`/blob/${workspaceId}`), 'the described prefix');
  const listing = await fetch(
    `${link.container_url}?${link.sas_token}&restype=container&comp=list`,
  );
  assert.is(listing.status, 200);
  assert.ok(container.get.responses['200']?.content?.['application/xml']);
});

test('the receipt keys are described once, and the answer has the described fields', async ({
  server,
  document,
}) => {
  const item = document.paths['/.well-known/service-keys.json'];
  assert.ok(item?.get, 'GET /.well-known/service-keys.json is described');
  const schema = item.get.responses['200']?.content?.['application/json']?.schema;
  assert.ok(schema, 'as JSON');
  const ids = Object.values(document.paths).flatMap((path) =>
    Object.values(path).map((entry) => (entry as Entry).operationId),
  );
  assert.is(ids.filter((id) => /service_keys$/.test(id ?? '')).length, 1, 'described once');
  const keys = (await (await server.get('/.well-known/service-keys.json')).json()) as {
    keys: Record<string, unknown>[];
  };
  assert.ok(keys.keys.length > 0);
  for (const field of ['kty', 'crv', 'x', 'kid']) assert.ok(field in (keys.keys[0] ?? {}));
});

test('HEAD is described beside every GET, without a body, and answers as GET does', async ({
  server,
  document,
}) => {
  for (const [path, item] of Object.entries(document.paths)) {
    if (!item.get) continue;
    assert.ok(item.head, `HEAD ${path} is described`);
    for (const [status, response] of Object.entries(item.head.responses)) {
      assert.is(response.content, undefined, `HEAD ${path} ${status} has no body`);
      assert.ok(item.get.responses[status], `HEAD ${path} ${status} is one of GET's`);
    }
    if (path.includes('{') || path === '/mcp') continue;
    const [get, head] = [await send(server, 'GET', path), await send(server, 'HEAD', path)];
    assert.is(head.status, get.status, `HEAD ${path}`);
    assert.ok(item.head.responses[String(head.status)], `HEAD ${path} ${head.status} is described`);
  }
});

test('Idempotency-Key is described on exactly the writes that honour it, write_file among them', async ({
  server,
  document,
}) => {
  let described = 0;
  for (const operation of OPERATION_LIST) {
    if (operation.operatorOnly) continue;
    const parameters = entryOf(document, operation.name).parameters ?? [];
    const has = parameters.some((p) => p.name === 'idempotency-key' && p.in === 'header');
    assert.is(has, takesIdempotencyKey(operation), `${operation.name}`);
    if (has) described++;
  }
  assert.ok(described > 10);
  assert.ok(
    (entryOf(document, 'write_file').parameters ?? []).some((p) => p.name === 'idempotency-key'),
    'write_file takes it',
  );
  assert.not.ok(
    (entryOf(document, 'sign_up').parameters ?? []).some((p) => p.name === 'idempotency-key'),
    'sign_up mints a secret: it refuses the key',
  );
  // What is described is honoured: a file PUT and a JSON write replay, sign_up refuses the key.
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const key = randomUUID();
  const put = () =>
    fetch(server.url(`/workspaces/${workspaceId}/files/a.txt`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${agent.api_token}`, 'idempotency-key': key },
      body: 'once',
    });
  const first = await put();
  assert.is(first.status, 201);
  const again = await put();
  assert.is(again.status, 201);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(await again.json(), await first.json());
  const signUp = await fetch(server.url('/agents'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ name: 'keyed sign up' }),
  });
  assert.is(signUp.status, 400);
});

test.run();
