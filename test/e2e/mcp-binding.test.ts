import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import {
  bytesReply,
  markdown,
  reply,
  resolveBinding,
  type ByteBody,
} from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { defineOperation, type Operation } from '../../protocol/operation.ts';
import {
  MCP_MAX_CONTENT_BYTES,
  operationUrl,
  takeBody,
  toolResult,
} from '../../server/mcp/binding.ts';
import { ToolTable } from '../../server/mcp/tools.ts';

/** How the MCP door carries a transport binding (protocol/binding.ts): bytes and markdown. */
const test = suite('MCP tools for byte and markdown bindings');

const putFile = defineOperation({
  name: 'put_file',
  method: 'PUT',
  path: '/workspaces/:workspace_id/files/*path',
  auth: 'agent',
  status: 201,
  summary: 'Save a file.',
  description: 'Saves the bytes of a file in a workspace; for this test only.',
  input: z.strictObject({ workspace_id: z.string(), path: z.string() }),
  output: z.object({ size: z.number() }),
  errors: [],
  binding: { body: { kind: 'bytes', maxBytes: 1000 } },
});
const getFile = defineOperation({
  name: 'get_file',
  method: 'GET',
  path: '/workspaces/:workspace_id/files/*path',
  auth: 'agent',
  status: 200,
  summary: 'Read a file.',
  description: 'Answers the bytes of a file in a workspace; for this test only.',
  input: z.strictObject({ workspace_id: z.string(), path: z.string() }),
  output: z.unknown(),
  errors: [],
  binding: { reply: { kind: 'bytes' } },
});
const readGuide = defineOperation({
  name: 'read_guide',
  method: 'GET',
  path: '/guide',
  auth: 'none',
  status: 200,
  summary: 'Read the guide.',
  description: 'Answers markdown; for this test only.',
  input: z.strictObject({}),
  output: z.string(),
  errors: [],
  binding: { reply: { kind: 'markdown' } },
});
const operations = [putFile, getFile, readGuide] as unknown as Operation[];
const bytesIn = resolveBinding('PUT', putFile.binding);
const bytesOut = resolveBinding('GET', getFile.binding);
const jsonOnly = resolveBinding('POST', undefined);

async function read(body: ByteBody | undefined): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body ?? []) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const refusal = (fn: () => unknown): ServiceError => {
  try {
    fn();
  } catch (error) {
    assert.instance(error, ServiceError);
    return error as ServiceError;
  }
  throw new Error('not refused');
};

test('a byte body is taken as UTF-8 `content` or as `content_base64`, beside the fields', async () => {
  const text = takeBody(bytesIn, { workspace_id: 'w', path: 'a.md', content: 'héllo' });
  assert.equal(text.fields, { workspace_id: 'w', path: 'a.md' });
  assert.equal(await read(text.body), Buffer.from('héllo', 'utf8'));
  const binary = takeBody(bytesIn, { path: 'b', content_base64: 'AAH/' });
  assert.equal(await read(binary.body), Buffer.from([0, 1, 255]));
  assert.is(binary.body?.declaredLength, 3);
});

test('a byte body sent twice, not at all, malformed or too large is refused with a code', () => {
  assert.is(refusal(() => takeBody(bytesIn, { path: 'x' })).code, 'invalid_input');
  assert.is(
    refusal(() => takeBody(bytesIn, { content: 'a', content_base64: 'YQ==' })).code,
    'invalid_input',
  );
  assert.is(
    refusal(() => takeBody(bytesIn, { content_base64: 'not base64!' })).code,
    'invalid_input',
  );
  assert.is(refusal(() => takeBody(bytesIn, { content: 42 })).code, 'invalid_input');
  const big = refusal(() => takeBody(bytesIn, { content: 'x'.repeat(1001) }));
  assert.is(big.code, 'payload_too_large');
  assert.is(big.extra.limit_bytes, 1000);
  assert.ok(takeBody(bytesIn, { content: 'x'.repeat(1000) }).body);
});

test('an operation with a JSON body keeps `content` as an ordinary field', () => {
  const taken = takeBody(jsonOnly, { content: 'kept' });
  assert.equal(taken.fields, { content: 'kept' });
  assert.is(taken.body, undefined);
});

test('a byte reply that is UTF-8 answers text, and structuredContent says what it is', async () => {
  const result = await toolResult(
    bytesOut,
    bytesReply(Buffer.from('# notes\n'), 'text/markdown', 'abc'),
    () => 'unused',
  );
  assert.equal(result.content, [{ type: 'text', text: '# notes\n' }]);
  assert.equal(result.structuredContent, {
    content_type: 'text/markdown',
    size: 8,
    etag: 'abc',
    text: '# notes\n',
  });
});

test('a byte reply that is not UTF-8 answers an embedded resource in base64', async () => {
  const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff]);
  const uri = operationUrl('http://svc.test', getFile.path, {
    workspace_id: 'w 1',
    path: 'img/a b.png',
  });
  assert.is(uri, 'http://svc.test/workspaces/w%201/files/img/a%20b.png');
  const result = await toolResult(bytesOut, bytesReply(bytes, 'image/png'), () => uri);
  assert.equal(result.content, [
    { type: 'resource', resource: { uri, mimeType: 'image/png', blob: bytes.toString('base64') } },
  ]);
  assert.equal(result.structuredContent, {
    content_type: 'image/png',
    size: 5,
    content_base64: bytes.toString('base64'),
  });
});

test('a byte reply larger than an MCP answer carries is refused, not read', async () => {
  const huge = {
    contentType: 'application/octet-stream',
    size: MCP_MAX_CONTENT_BYTES + 1,
    // eslint-disable-next-line require-yield -- never iterated: the size alone refuses it
    async *open(): AsyncIterable<Uint8Array> {
      throw new Error('read although too large');
    },
  };
  const error = await toolResult(bytesOut, huge, () => 'x').catch((e: unknown) => e);
  assert.instance(error, ServiceError);
  assert.is((error as ServiceError).code, 'payload_too_large');
});

test('markdown answers one text item and no structuredContent; reply() keeps its status in _meta', async () => {
  const guide = await toolResult(
    resolveBinding('GET', readGuide.binding),
    markdown('# Hi'),
    () => '',
  );
  assert.equal(guide, { content: [{ type: 'text', text: '# Hi' }] });
  const created = await toolResult(jsonOnly, reply(201, { id: 1 }, { location: '/x/1' }), () => '');
  assert.equal(created.structuredContent, { id: 1 });
  assert.equal(created._meta, { http_status: 201, http_headers: { location: '/x/1' } });
  const empty = await toolResult(jsonOnly, reply(204), () => '');
  assert.equal(empty.content, []);
  assert.is(empty.structuredContent, undefined);
});

test('tools of such operations describe their byte arguments and promise no schema markdown cannot keep', () => {
  const table = new ToolTable(operations);
  const put = table.find('put_file', false);
  const properties = put?.tool.inputSchema.properties ?? {};
  assert.ok(properties.content && properties.content_base64 && properties.api_token);
  assert.ok(properties.workspace_id && properties.path);
  const get = table.find('get_file', false)?.tool;
  assert.equal(get?.outputSchema?.required, ['content_type', 'size']);
  assert.is(table.find('read_guide', false)?.tool.outputSchema, undefined);
  // The door reads enough for the largest byte body as base64, plus its fields and envelope.
  assert.ok(table.bodyLimit >= Math.ceil(1000 / 3) * 4 + (put?.argumentLimit ?? 0));
});

test.run();
