import { randomBytes } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import * as assert from 'uvu/assert';
import { sha256 } from '../helpers/digests.ts';
import { startTestServer } from '../helpers/server.ts';
import {
  json,
  MIB,
  put,
  rawExchange,
  repeat,
  send,
  statusesOf,
  transportSuite,
} from '../helpers/transport.ts';

/**
 * The transport binding end to end (protocol/binding.ts), through the test-only operations of
 * server/http/test-operations.ts: limits, ranges, conditional requests, HEAD, statuses and
 * headers, path parameters, negotiation and OpenAPI. Runs on the engine HTTP_ENGINE names; CI
 * runs the suite once per engine. Streaming has a file of its own (transport-streaming.test.ts).
 */
const test = transportSuite('transport binding');

// ---------------------------------------------------------------------------------------------
// Limits.

test('a declared length over the limit is answered 413 before any of the body is sent', async ({
  server,
}) => {
  // No body bytes at all follow the headers: the answer can only come from the length.
  const answer = await send(server, 'POST', '/test/echo', {
    headers: { 'content-length': String(10 * MIB) },
  });
  assert.is(answer.status, 413);
  assert.is(json(answer).code, 'payload_too_large');
  assert.is(json(answer).limit_bytes, 64 * 1024);
});

test('a chunked body without a length is refused with 413 once it passes the limit', async ({
  server,
}) => {
  const answer = await send(server, 'POST', '/test/echo', {
    headers: { 'transfer-encoding': 'chunked' },
    body: repeat(new Uint8Array(8 * 1024), 64),
  });
  assert.is(answer.status, 413);
  assert.is(json(answer).code, 'payload_too_large');
});

test('a body at the limit is taken whole', async ({ server }) => {
  const bytes = randomBytes(64 * 1024);
  const answer = await send(server, 'POST', '/test/echo', {
    headers: { 'transfer-encoding': 'chunked' },
    body: [bytes.subarray(0, 1000), bytes.subarray(1000)],
  });
  assert.is(answer.status, 200);
  assert.equal(json(answer), {
    size: bytes.length,
    sha256: sha256(bytes),
    declared_length: null,
    headers: {},
  });
});

test('a Content-Length that lies never puts more than it declares into a body', async ({
  server,
}) => {
  // HTTP/1.1 frames a body by its declared length: the surplus is read as the next request,
  // which is malformed. node:http answers 400 and closes (before the echo answers); uWS closes
  // on it, after answering the 10 bytes when the surplus is small and at once when it is
  // large. Either way no handler ever sees byte 11, and nothing fails on the service's side.
  const head = 'POST /test/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n';
  for (const surplus of [20, 100 * 1024]) {
    const raw = await rawExchange(server, head, Buffer.alloc(10 + surplus, 'a'));
    for (const status of statusesOf(raw)) assert.ok(status < 500, raw);
    for (const status of statusesOf(raw)) assert.ok(status === 200 || status === 400, raw);
    const sizes = [...raw.matchAll(/"size":(\d+)/g)].map((match) => Number(match[1]));
    for (const size of sizes) assert.is(size, 10);
  }
  assert.is(server.openHttpRequests(), 0, 'no request is left open');
});

test('a body with both Content-Length and chunked encoding is refused unread', async ({
  server,
}) => {
  // The framing of request smuggling: node:http answers 400, uWS resets the connection.
  const chunk = Buffer.alloc(16 * 1024, 'b');
  const raw = await rawExchange(
    server,
    'POST /test/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n',
    ...Array.from({ length: 8 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
    '0\r\n\r\n',
  );
  for (const status of statusesOf(raw)) assert.ok(status === 400 || status === 413, raw);
  assert.not.match(raw, /"size"/);
});

// ---------------------------------------------------------------------------------------------
// Byte replies: validators, ranges, HEAD.

test('ETag and If-None-Match answer 304 without a body', async ({ server }) => {
  const bytes = Buffer.from('the same bytes');
  await put(server, 'etag.txt', bytes);
  const whole = await send(server, 'GET', '/test/blobs/etag.txt');
  assert.is(whole.status, 200);
  assert.is(whole.headers.etag, `"${sha256(bytes)}"`);
  assert.is(whole.headers['accept-ranges'], 'bytes');
  assert.is(whole.headers['content-type'], 'application/octet-stream');
  for (const tag of [
    `"${sha256(bytes)}"`,
    `W/"${sha256(bytes)}"`,
    `"other", "${sha256(bytes)}"`,
    '*',
  ]) {
    const again = await send(server, 'GET', '/test/blobs/etag.txt', {
      headers: { 'if-none-match': tag },
    });
    assert.is(again.status, 304, tag);
    assert.is(again.body.length, 0);
    assert.is(again.headers.etag, `"${sha256(bytes)}"`);
    assert.is(again.headers['content-length'], undefined, 'no length for a 304');
  }
  const changed = await send(server, 'GET', '/test/blobs/etag.txt', {
    headers: { 'if-none-match': '"other"' },
  });
  assert.is(changed.status, 200);
  assert.equal(changed.body, bytes);
});

test('Range answers 206 with Content-Range for one range of any form', async ({ server }) => {
  const bytes = Buffer.from('0123456789abcdefghij');
  await put(server, 'range.txt', bytes);
  const cases: [string, string, string][] = [
    ['bytes=0-0', '0', 'bytes 0-0/20'],
    ['bytes=5-9', '56789', 'bytes 5-9/20'],
    ['bytes=15-', 'fghij', 'bytes 15-19/20'],
    ['bytes=-3', 'hij', 'bytes 17-19/20'],
    ['bytes=18-1000', 'ij', 'bytes 18-19/20'],
    ['bytes=-1000', bytes.toString(), 'bytes 0-19/20'],
  ];
  for (const [range, body, contentRange] of cases) {
    const answer = await send(server, 'GET', '/test/blobs/range.txt', { headers: { range } });
    assert.is(answer.status, 206, range);
    assert.is(answer.body.toString(), body, range);
    assert.is(answer.headers['content-range'], contentRange, range);
    assert.is(answer.headers['content-length'], String(body.length), range);
  }
});

test('a Range past the end answers 416 with the size; several or malformed ranges get the whole', async ({
  server,
}) => {
  const bytes = Buffer.from('0123456789');
  await put(server, 'range-416.txt', bytes);
  for (const range of ['bytes=10-', 'bytes=100-200', 'bytes=-0']) {
    const answer = await send(server, 'GET', '/test/blobs/range-416.txt', { headers: { range } });
    assert.is(answer.status, 416, range);
    assert.is(answer.headers['content-range'], 'bytes */10');
    assert.is(answer.headers['content-type'], 'application/problem+json');
    assert.is(json(answer).code, 'range_not_satisfiable');
  }
  for (const range of ['bytes=0-1,5-6', 'bytes=5-2', 'items=0-1', 'bytes=abc']) {
    const answer = await send(server, 'GET', '/test/blobs/range-416.txt', { headers: { range } });
    assert.is(answer.status, 200, range);
    assert.equal(answer.body, bytes);
  }
});

test('If-Range with another entity tag serves the whole instead of the range', async ({
  server,
}) => {
  const bytes = Buffer.from('0123456789');
  await put(server, 'if-range.txt', bytes);
  const stale = await send(server, 'GET', '/test/blobs/if-range.txt', {
    headers: { range: 'bytes=0-1', 'if-range': '"stale"' },
  });
  assert.is(stale.status, 200);
  assert.equal(stale.body, bytes);
  const current = await send(server, 'GET', '/test/blobs/if-range.txt', {
    headers: { range: 'bytes=0-1', 'if-range': `"${sha256(bytes)}"` },
  });
  assert.is(current.status, 206);
  assert.is(current.body.toString(), '01');
});

test('HEAD answers the headers of GET without the body', async ({ server }) => {
  const bytes = randomBytes(100_000);
  await put(server, 'head.bin', bytes);
  const get = await send(server, 'GET', '/test/blobs/head.bin');
  const head = await send(server, 'HEAD', '/test/blobs/head.bin');
  assert.is(head.status, 200);
  assert.is(head.body.length, 0);
  for (const name of ['content-type', 'content-length', 'etag', 'accept-ranges']) {
    assert.is(head.headers[name], get.headers[name], name);
  }
  assert.is(head.headers['content-length'], '100000');
  const ranged = await send(server, 'HEAD', '/test/blobs/head.bin', {
    headers: { range: 'bytes=0-9' },
  });
  assert.is(ranged.status, 206);
  assert.is(ranged.headers['content-length'], '10');
  assert.is(ranged.body.length, 0);
  const missing = await send(server, 'HEAD', '/test/blobs/nothing-here.bin');
  assert.is(missing.status, 404);
  assert.is(missing.body.length, 0);
});

test('an empty file answers 200 with Content-Length 0', async ({ server }) => {
  assert.is(
    (await send(server, 'PUT', '/test/blobs/empty.txt', { headers: { 'content-length': '0' } }))
      .status,
    201,
  );
  const answer = await send(server, 'GET', '/test/blobs/empty.txt');
  assert.is(answer.status, 200);
  assert.is(answer.headers['content-length'], '0');
  assert.is(answer.body.length, 0);
});

// ---------------------------------------------------------------------------------------------
// Statuses, headers, paths, negotiation.

test('a handler answers its declared statuses and headers: 201 with Location, then 200', async ({
  server,
}) => {
  const first = await put(server, 'status/x.txt', Buffer.from('one'));
  assert.is(first.status, 201);
  assert.is(first.headers.location, '/test/blobs/status/x.txt');
  const second = await put(server, 'status/x.txt', Buffer.from('two'));
  assert.is(second.status, 200);
  assert.is((await send(server, 'GET', '/test/blobs/status/x.txt')).body.toString(), 'two');
});

test('a refusal carries the headers its error names (Retry-After)', async ({ server }) => {
  const answer = await send(server, 'POST', '/test/echo?retry_after=7', {
    body: [Buffer.from('x')],
  });
  assert.is(answer.status, 503);
  assert.is(answer.headers['retry-after'], '7');
  assert.is(json(answer).code, 'service_unavailable');
});

test('a handler sees the request headers its operation declares, and no others', async ({
  server,
}) => {
  const answer = await send(server, 'POST', '/test/echo', {
    headers: {
      'content-type': 'text/plain',
      'x-test-note': 'hello',
      'x-other': 'hidden',
      authorization: 'Bearer asvc_notforthehandler',
      cookie: 'a=b',
    },
    body: [Buffer.from('abc')],
  });
  assert.is(answer.status, 200);
  assert.equal(json(answer).headers, { 'content-type': 'text/plain', 'x-test-note': 'hello' });
});

test('%2F in a path is a `/`, and NUL, . and .. segments are refused, plain or encoded', async ({
  server,
}) => {
  await put(server, 'a/b', Buffer.from('two segments'));
  const encoded = await send(server, 'GET', '/test/blobs/a%2Fb');
  assert.is(encoded.status, 200);
  assert.is(encoded.body.toString(), 'two segments');
  assert.is((await send(server, 'GET', '/test/blobs/a/b')).body.toString(), 'two segments');
  for (const path of [
    '/test/blobs/a%00b',
    '/test/blobs/a%2F..%2Fb',
    '/test/blobs/a/../b',
    '/test/blobs/../etc/passwd',
    '/test/blobs/a/%2e%2e/b',
    '/test/blobs/./a',
    '/test/blobs/a//b',
  ]) {
    const answer = await send(server, 'PUT', path, {
      headers: { 'content-length': '1' },
      body: [Buffer.from('x')],
    });
    assert.is(answer.status, 400, path);
    assert.is(json(answer).code, 'invalid_path', path);
  }
  // Encoded characters other than `/` are a name's own, decoded once.
  const spaced = await put(server, 'caf%C3%A9/a%20b%25.txt', Buffer.from('x'));
  assert.is(json(spaced).name, 'café/a b%.txt');
});

test('Accept picks JSON or markdown where an operation offers both, and 406 where neither', async ({
  server,
}) => {
  const cases: [string | undefined, string][] = [
    [undefined, 'application/json'],
    ['*/*', 'application/json'],
    ['application/json', 'application/json'],
    ['text/markdown', 'text/markdown; charset=utf-8'],
    ['text/*', 'text/markdown; charset=utf-8'],
    ['text/markdown;q=0.4, application/json;q=0.9', 'application/json'],
    ['application/json;q=0.4, text/markdown', 'text/markdown; charset=utf-8'],
    ['text/html, */*;q=0.1', 'application/json'],
  ];
  for (const [accept, type] of cases) {
    const answer = await send(server, 'GET', '/test/greeting', {
      headers: accept ? { accept } : {},
    });
    assert.is(answer.status, 200, accept);
    assert.is(answer.headers['content-type'], type, accept);
    assert.is(answer.headers.vary, 'accept');
    if (type === 'application/json') assert.equal(json(answer), { greeting: 'Hello' });
    else assert.match(answer.body.toString(), /^# Hello/);
  }
  for (const accept of ['image/png', 'application/json;q=0, text/markdown;q=0']) {
    const answer = await send(server, 'GET', '/test/greeting', { headers: { accept } });
    assert.is(answer.status, 406, accept);
    assert.is(json(answer).code, 'not_acceptable');
  }
});

test('JSON routes ignore Accept as before', async ({ server }) => {
  const answer = await send(server, 'GET', '/health', { headers: { accept: 'image/png' } });
  assert.is(answer.status, 200);
});

// ---------------------------------------------------------------------------------------------
// OpenAPI and the flag.

test('/openapi.json describes byte bodies, byte and markdown replies, statuses, headers and rest parameters, and validates', async ({
  server,
}) => {
  const document = (await (await server.get('/openapi.json')).json()) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
  };
  const result = await new Validator().validate(document as never);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  const blobs = document.paths['/test/blobs/{name}'];
  assert.ok(blobs, 'the rest parameter is a path template');
  const put = blobs.put as {
    requestBody: { content: Record<string, unknown>; description: string };
    responses: Record<
      string,
      { headers?: Record<string, unknown>; content?: Record<string, unknown> }
    >;
    parameters: { name: string; in: string; description?: string }[];
  };
  assert.ok(put.requestBody.content['application/octet-stream'], 'a byte body');
  assert.match(put.requestBody.description, /268435456 bytes/);
  assert.ok(put.responses['201']?.headers?.location, 'Location on 201');
  assert.ok(put.responses['200'], 'the declared 200');
  assert.ok(put.responses['413'], 'payload_too_large');
  assert.match(put.parameters.find((p) => p.name === 'name')?.description ?? '', /%2F/);
  const get = blobs.get as {
    responses: Record<
      string,
      { content?: Record<string, unknown>; headers?: Record<string, unknown> }
    >;
  };
  assert.ok(get.responses['200']?.content?.['application/octet-stream'], 'a byte reply');
  assert.ok(get.responses['200']?.headers?.etag);
  assert.ok(get.responses['206']?.headers?.['content-range']);
  assert.ok(get.responses['304']);
  assert.ok(get.responses['416']);
  assert.ok(blobs.head, 'HEAD is listed');
  const echo = document.paths['/test/echo']?.post as { parameters: { name: string; in: string }[] };
  assert.ok(echo.parameters.some((p) => p.name === 'x-test-note' && p.in === 'header'));
  assert.ok(echo.parameters.some((p) => p.name === 'retry_after' && p.in === 'query'));
  const greeting = document.paths['/test/greeting']?.get as {
    responses: Record<string, { content: Record<string, unknown> }>;
  };
  assert.equal(Object.keys(greeting.responses['200']?.content ?? {}), [
    'application/json',
    'text/markdown',
  ]);
  assert.ok(greeting.responses['406']);
});

test('operator-only operations are absent from /openapi.json', async ({ server }) => {
  const document = (await (await server.get('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  const ids = Object.values(document.paths).flatMap((entry) =>
    Object.values(entry).map((op) => op.operationId),
  );
  assert.not.ok(ids.includes('answer_feedback'));
  assert.ok(ids.includes('leave_feedback'));
});

test('without the flag, the test operations are neither served nor listed', async () => {
  const plain = await startTestServer();
  try {
    assert.is((await fetch(plain.url('/test/echo'), { method: 'POST', body: 'x' })).status, 404);
    assert.is((await fetch(plain.url('/test/blobs/a'))).status, 404);
    const text = await (await fetch(plain.url('/openapi.json'))).text();
    assert.not.match(text, /test_echo|test_put_blob|\/test\//);
  } finally {
    await plain.close();
  }
});

test.run();
