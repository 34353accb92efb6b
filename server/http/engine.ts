import type { Server as SocketIoServer } from 'socket.io';
import type { ByteBody } from '../../protocol/binding.ts';

/**
 * The seam between the doors and the HTTP server underneath. Two engines implement it:
 * uWebSockets.js (fast; Node 20 only) and node:http (everywhere). Everything above this file
 * sees only these types, so every route behaves the same on both.
 */
export interface EngineRequest {
  /** Upper case. */
  method: string;
  /** The path, percent-encoded as it arrived, without the query. */
  path: string;
  /** The raw query string, without `?`. */
  query: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The peer's IP address, as text. */
  remoteAddress: string;
  /**
   * Reads the whole body, at most `limit` bytes. A body that declares or reaches more is
   * refused with a 413 ServiceError before it is read whole.
   */
  body(limit: number): Promise<Buffer>;
  /**
   * The body as a stream that pulls from the socket (body-stream.ts), at most `limit` bytes;
   * throws the 413 at once when the declared length is over. Read a body once, either way.
   */
  stream(limit: number): ByteBody;
  /** Aborted when the client goes away or the server shuts down. */
  signal: AbortSignal;
}

export interface EngineResponse {
  status: number;
  /** Lower-case names. Never `content-length`: the engine writes it. */
  headers: Record<string, string>;
  body: string | Uint8Array;
  /**
   * Instead of `body`: exactly `length` bytes, streamed with backpressure; `chunks` null sends
   * the headers alone with `Content-Length: length` (HEAD). A source that ends short closes
   * the connection; one that goes on is cut at `length`. The engine stops iterating (`return`)
   * when the client goes away.
   */
  stream?: { length: number; chunks: AsyncIterable<Uint8Array> | null };
  /** Close the connection after answering (e.g. a body was refused unread). */
  close?: boolean;
}

export type RequestHandler = (request: EngineRequest) => Promise<EngineResponse>;

export interface HttpEngine {
  readonly name: 'uws' | 'node';
  /** Starts listening; resolves with the port actually bound (for port 0). */
  listen(host: string, port: number): Promise<number>;
  attachSocketIo(io: SocketIoServer): void;
  /**
   * For a socket.io handshake about to wait for its turn (server/socket/handshake-turns.ts):
   * a function that says whether its client has gone meanwhile, or null when this handshake
   * must not wait. `request` is what engine.io hands its `allowRequest` on this engine. Call it
   * at once: on uWS it registers for the abort, and an aborted response must not be touched.
   */
  handshakeWait(request: unknown): (() => boolean) | null;
  /** Takes no new connection; connections open already still bring requests. */
  stopListening(): void;
  /**
   * Stops listening, waits up to `waitMs` (default 0) for the requests in flight to be
   * answered, then aborts those still open and closes every connection.
   */
  close(waitMs?: number): Promise<void>;
  /** Requests taken and not yet answered or aborted (tests check that none is left behind). */
  readonly openRequests: number;
}

/**
 * Lets go of a streamed answer that will never be sent (the client left first), so that its
 * source closes what it holds.
 */
export function dropStream(response: EngineResponse): void {
  const chunks = response.stream?.chunks;
  if (!chunks) return;
  const iterator = chunks[Symbol.asyncIterator]();
  void Promise.resolve(iterator.return?.()).catch(() => undefined);
}

/**
 * Resolves once `open()` is 0 or after `waitMs`, whichever comes first. It looks every 10 ms:
 * it runs once, at shutdown, and answers end on their own time, with no event for "the last".
 */
export async function requestsFinished(open: () => number, waitMs: number): Promise<void> {
  const deadline = performance.now() + waitMs;
  while (open() > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(10, waitMs)));
  }
}
