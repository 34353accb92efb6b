/**
 * The header thread: reads YAML headers too large to read on the event loop (yaml-header.ts),
 * one at a time, in the order they come. It says `ready` once loaded, so that the time it takes
 * to start never counts against a header's deadline (header-thread.ts).
 */
import { parentPort } from 'node:worker_threads';
import { readHeader, type HeaderReading } from './yaml-header.ts';

export type HeaderThreadRequest =
  | { id: number; source: string }
  /** Test-only: the thread waits until the first int of `hold` is set, as if reading a header. */
  | { id: number; hold: SharedArrayBuffer };

export type HeaderThreadReply = 'ready' | { id: number; reading: HeaderReading };

if (!parentPort) throw new Error('header-worker must run as a worker thread');
const port = parentPort;

port.on('message', (request: HeaderThreadRequest) => {
  if ('hold' in request) {
    Atomics.wait(new Int32Array(request.hold), 0, 0);
    port.postMessage({ id: request.id, reading: { fields: {} } } satisfies HeaderThreadReply);
    return;
  }
  port.postMessage({
    id: request.id,
    reading: readHeader(request.source),
  } satisfies HeaderThreadReply);
});
port.postMessage('ready' satisfies HeaderThreadReply);
