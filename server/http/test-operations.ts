import { createHash, randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Call } from '../../actors/kernel/handler.ts';
import {
  markdown,
  reply,
  type ByteBody,
  type ByteRange,
  type ByteReply,
  type CallTransport,
} from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { defineOperation, type Operation } from '../../protocol/operation.ts';
import type { AnyHandler } from '../invoke.ts';

/**
 * Operations that exist only for tests, to prove the transport binding end to end on both
 * engines: a byte store in a temporary directory (streamed upload, streamed and ranged
 * download), an echo of a small body, and a JSON-or-markdown greeting. They are served only
 * when `Config.testOperations` is true (startTestServer passes it; nothing in the environment
 * sets it), and are then absent from every other table: never in OPERATIONS, so never in
 * /openapi.json, MCP's tools/list or the documents unless a test server asks for them.
 */

const blobName = z.string().describe('One or more path segments.');

const testPutBlob = defineOperation({
  name: 'test_put_blob',
  method: 'PUT',
  path: '/test/blobs/*name',
  auth: 'none',
  status: 201,
  summary: 'Test only: store the request body under a name.',
  description: 'Streams the body to a temporary file; 201 when new, 200 when replaced.',
  input: z.strictObject({
    name: blobName,
    slow: z
      .literal('true')
      .optional()
      .describe('Take each chunk a millisecond late, as a slow disk would.'),
  }),
  output: z
    .object({ name: z.string(), size: z.int().nonnegative(), sha256: z.string() })
    .meta({ id: 'TestBlob' }),
  errors: [],
  binding: {
    body: { kind: 'bytes', maxBytes: 256 * 1024 * 1024 },
    statuses: [{ status: 200, description: 'An existing blob was replaced.' }],
    replyHeaders: { location: 'Where the blob is read back.' },
  },
});

const testGetBlob = defineOperation({
  name: 'test_get_blob',
  method: 'GET',
  path: '/test/blobs/*name',
  auth: 'none',
  status: 200,
  readOnly: true,
  summary: 'Test only: read a stored blob, whole or ranged.',
  description: 'The bytes, with ETag (the sha256), Range and HEAD.',
  input: z.strictObject({ name: blobName }),
  output: z.string().describe('The bytes.'),
  errors: ['not_found'],
  binding: { reply: { kind: 'bytes', contentType: 'application/octet-stream' } },
});

const testEcho = defineOperation({
  name: 'test_echo',
  method: 'POST',
  path: '/test/echo',
  auth: 'none',
  status: 200,
  summary: 'Test only: the size and sha256 of a small body, and the headers the handler saw.',
  description: 'At most 64 KiB. `retry_after` refuses with 503 and that Retry-After instead.',
  input: z.strictObject({ retry_after: z.coerce.number().int().positive().optional() }),
  output: z
    .object({
      size: z.int().nonnegative(),
      sha256: z.string(),
      declared_length: z.int().nullable(),
      headers: z.record(z.string(), z.string()),
    })
    .meta({ id: 'TestEcho' }),
  errors: ['service_unavailable'],
  binding: {
    body: { kind: 'bytes', maxBytes: 64 * 1024 },
    requestHeaders: {
      'content-type': 'The type of the body.',
      'x-test-note': 'Any text; echoed back.',
    },
  },
});

const testGreeting = defineOperation({
  name: 'test_greeting',
  method: 'GET',
  path: '/test/greeting',
  auth: 'none',
  status: 200,
  readOnly: true,
  summary: 'Test only: a greeting as JSON or markdown, by Accept.',
  description: 'JSON unless `Accept` prefers `text/markdown`.',
  input: z.strictObject({}),
  output: z.object({ greeting: z.string() }).meta({ id: 'TestGreeting' }),
  errors: [],
  binding: { reply: { kind: 'json_or_markdown' } },
});

/** What the blob handlers report, so that tests wait for events instead of time. */
export const testOperationEvents = new EventEmitter<{
  /** An upload's first chunk reached the handler. */
  'upload-started': [name: string];
  /** An upload's handler has taken this many bytes of its body so far. */
  'upload-read': [name: string, bytes: number];
  /** An upload failed; its temporary file is already removed. */
  'upload-failed': [name: string, error: unknown];
  /** A download read this many bytes of its file so far. */
  'download-read': [name: string, bytes: number];
  /** A download's file was closed, read to the end or not. */
  'download-closed': [name: string, bytes: number];
}>();

interface StoredBlob {
  file: string;
  size: number;
  sha256: string;
}

let directory: string | null = null;
const blobs = new Map<string, StoredBlob>();

/** The temporary directory the blobs are kept in (made on first use). */
export function testBlobDirectory(): string {
  directory ??= mkdtempSync(join(tmpdir(), 'agent-service-test-blobs-'));
  return directory;
}

/** Forgets every blob and removes the directory. */
export function removeTestBlobs(): void {
  blobs.clear();
  if (directory) rmSync(directory, { recursive: true, force: true });
  directory = null;
}

type BytesCall = Call & CallTransport & { body: ByteBody };

const putBlob = async (call: BytesCall, input: { name: string; slow?: 'true' }) => {
  const part = join(testBlobDirectory(), `${randomUUID()}.part`);
  const file = createWriteStream(part);
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of call.body) {
      if (size === 0) testOperationEvents.emit('upload-started', input.name);
      size += chunk.length;
      testOperationEvents.emit('upload-read', input.name, size);
      hash.update(chunk);
      if (!file.write(chunk)) await once(file, 'drain');
      if (input.slow) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await new Promise<void>((resolve, reject) =>
      file.end((error?: Error | null) => (error ? reject(error) : resolve())),
    );
  } catch (error) {
    file.destroy();
    await once(file, 'close');
    rmSync(part, { force: true });
    testOperationEvents.emit('upload-failed', input.name, error);
    throw error;
  }
  const final = join(testBlobDirectory(), `${randomUUID()}.blob`);
  renameSync(part, final);
  const previous = blobs.get(input.name);
  if (previous) rmSync(previous.file, { force: true });
  const blob = { file: final, size, sha256: hash.digest('hex') };
  blobs.set(input.name, blob);
  const location = `/test/blobs/${input.name.split('/').map(encodeURIComponent).join('/')}`;
  return reply(previous ? 200 : 201, { name: input.name, size, sha256: blob.sha256 }, { location });
};

const getBlob = async (_call: Call, input: { name: string }): Promise<ByteReply> => {
  const blob = blobs.get(input.name);
  if (!blob) throw new ServiceError('not_found', `No blob is called ${input.name}.`);
  return {
    contentType: 'application/octet-stream',
    size: blob.size,
    etag: blob.sha256,
    open: (range?: ByteRange) => readFile(input.name, blob.file, range),
  };
};

/** A file's bytes (or a range of them), reporting progress and the closing of the file. */
async function* readFile(name: string, file: string, range?: ByteRange) {
  const stream = createReadStream(file, range ? { start: range.start, end: range.end } : {});
  let bytes = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      testOperationEvents.emit('download-read', name, bytes);
      yield chunk;
    }
  } finally {
    stream.destroy();
    testOperationEvents.emit('download-closed', name, bytes);
  }
}

const echo = async (call: BytesCall, input: { retry_after?: number }) => {
  if (input.retry_after !== undefined) {
    throw new ServiceError(
      'service_unavailable',
      'Refused on request.',
      {},
      { 'retry-after': String(input.retry_after) },
    );
  }
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of call.body) {
    size += chunk.length;
    hash.update(chunk);
  }
  return {
    size,
    sha256: hash.digest('hex'),
    declared_length: call.body.declaredLength,
    headers: call.headers,
  };
};

const greeting = async (call: Call & CallTransport) =>
  call.format === 'markdown'
    ? markdown('# Hello\n\nFrom the test greeting.\n')
    : { greeting: 'Hello' };

/** Each test operation with its handler, in the order routes are added. */
export const TEST_OPERATIONS: readonly { operation: Operation; handler: AnyHandler }[] = [
  { operation: testPutBlob, handler: putBlob as AnyHandler },
  { operation: testGetBlob, handler: getBlob as AnyHandler },
  { operation: testEcho, handler: echo as AnyHandler },
  { operation: testGreeting, handler: greeting as AnyHandler },
];
