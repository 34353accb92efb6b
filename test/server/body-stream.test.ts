import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ServiceError } from '../../protocol/errors.ts';
import { BodyStream, ClientGone, HIGH_WATER_BYTES } from '../../server/http/body-stream.ts';

const test = suite('request body stream');

/** A socket stand-in that records what the stream asked of it. */
function source() {
  const calls: string[] = [];
  return {
    calls,
    paused: () =>
      calls.filter((c) => c === 'pause').length > calls.filter((c) => c === 'resume').length,
    pause: () => void calls.push('pause'),
    resume: () => void calls.push('resume'),
  };
}

const KIB = 1024;

test('a reader that falls behind pauses the socket, and catching up resumes it', async () => {
  const socket = source();
  const body = new BodyStream(null, socket, undefined);
  const reader = body.stream(10 * 1024 * KIB)[Symbol.asyncIterator]();
  // The client sends faster than anyone reads: the socket is paused at the high-water mark.
  let sent = 0;
  while (!socket.paused()) {
    body.push(new Uint8Array(16 * KIB));
    sent += 16 * KIB;
  }
  assert.ok(sent >= HIGH_WATER_BYTES && sent < HIGH_WATER_BYTES + 16 * KIB, `paused at ${sent}`);
  // Reading brings it back once most of what is held was taken.
  let read = 0;
  while (socket.paused()) read += ((await reader.next()).value as Uint8Array).length;
  assert.ok(read > 0 && read < sent, `resumed after ${read} of ${sent}`);
  body.end();
  for (;;) {
    const next = await reader.next();
    if (next.done) break;
    read += next.value.length;
  }
  assert.is(read, sent);
  assert.ok(body.complete);
});

test('a reader waits for chunks that have not arrived, and ends with the body', async () => {
  const body = new BodyStream(6, source(), 'text/plain');
  const stream = body.stream(100);
  assert.is(stream.declaredLength, 6);
  assert.is(stream.contentType, 'text/plain');
  const reader = stream[Symbol.asyncIterator]();
  const first = reader.next();
  body.push(new TextEncoder().encode('abc'));
  assert.is(new TextDecoder().decode((await first).value as Uint8Array), 'abc');
  const second = reader.next();
  body.push(new TextEncoder().encode('def'));
  body.end();
  assert.is(new TextDecoder().decode((await second).value as Uint8Array), 'def');
  assert.ok((await reader.next()).done);
});

test('a declared length over the limit is refused before a byte is read', () => {
  const socket = source();
  const body = new BodyStream(2000, socket, undefined);
  try {
    body.stream(1000);
    assert.unreachable('refused');
  } catch (error) {
    assert.instance(error, ServiceError);
    assert.is((error as ServiceError).code, 'payload_too_large');
    assert.is((error as ServiceError).extra.limit_bytes, 1000);
  }
  assert.ok(socket.paused(), 'the socket is not read further');
});

test('a body without a length is refused once it passes the limit, and the reader throws', async () => {
  const socket = source();
  const body = new BodyStream(null, socket, undefined);
  const reader = body.stream(1000)[Symbol.asyncIterator]();
  body.push(new Uint8Array(600));
  assert.is(((await reader.next()).value as Uint8Array).length, 600);
  body.push(new Uint8Array(600));
  assert.ok(socket.paused(), 'the socket is not read further');
  try {
    await reader.next();
    assert.unreachable('refused');
  } catch (error) {
    assert.is((error as ServiceError).code, 'payload_too_large');
  }
  assert.not.ok(body.complete);
});

test('a body that came in over the limit before the route named it is refused at once', async () => {
  const body = new BodyStream(null, source(), undefined);
  body.push(new Uint8Array(2000));
  assert.throws(
    () => body.stream(1000),
    (error: unknown) => (error as ServiceError).code === 'payload_too_large',
  );
});

test('a client that goes away mid-body makes the waiting reader throw', async () => {
  const body = new BodyStream(10_000, source(), undefined);
  const reader = body.stream(10_000)[Symbol.asyncIterator]();
  body.push(new Uint8Array(100));
  await reader.next();
  const waiting = reader.next();
  body.abort();
  try {
    await waiting;
    assert.unreachable('thrown');
  } catch (error) {
    assert.instance(error, ClientGone);
  }
});

test('read() gives the whole body, and a body is read only once', async () => {
  const body = new BodyStream(null, source(), undefined);
  const whole = body.read(100);
  body.push(new TextEncoder().encode('{"a":'));
  body.push(new TextEncoder().encode('1}'));
  body.end();
  assert.is((await whole).toString(), '{"a":1}');
  assert.throws(() => body.stream(100), /only once/);
});

test.run();
