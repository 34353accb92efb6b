import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server as SocketIoServer } from 'socket.io';
import { BodyStream } from './body-stream.ts';
import { LazyAbort } from './abort.ts';
import { TakenRequest } from './taken-request.ts';
import { isBodyless } from '../../protocol/binding.ts';
import { SOCKET_PATH } from '../../protocol/message-signature.ts';
import {
  dropStream,
  requestsFinished,
  type EngineResponse,
  type HttpEngine,
  type RequestHandler,
} from './engine.ts';

/** node:http behind the same seam: used where uWS cannot load, or with HTTP_ENGINE=node. */
export function createNodeEngine(handler: RequestHandler): HttpEngine {
  const open = new Set<LazyAbort>();
  /** Resolves once the server has stopped listening and its last connection closed. */
  let closed: Promise<void> | null = null;
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const controller = new LazyAbort();
    open.add(controller);
    // A request without a length or chunked encoding has no body: nothing to collect.
    const length = headers['content-length'];
    const hasBody = (length !== undefined && length !== '0') || 'transfer-encoding' in headers;
    const body = hasBody
      ? new BodyStream(
          length === undefined ? null : Number(length),
          { pause: () => req.pause(), resume: () => req.resume() },
          headers['content-type'],
        )
      : null;
    if (body) {
      req.on('data', (chunk: Buffer) => body.push(chunk));
      req.on('end', () => body.end());
    }
    res.on('close', () => {
      open.delete(controller);
      if (!res.writableFinished) {
        controller.abort();
        body?.abort();
      }
    });
    handler(
      new TakenRequest(
        (req.method ?? 'GET').toUpperCase(),
        mark === -1 ? url : url.slice(0, mark),
        mark === -1 ? '' : url.slice(mark + 1),
        headers,
        req.socket.remoteAddress ?? '',
        body,
        controller,
      ),
    )
      .then(
        (response) => {
          if (res.destroyed) return dropStream(response);
          // An unread rest of the body is dropped by closing rather than read to the end; whoever
          // still reads it gets ClientGone rather than waiting for chunks that never come.
          if (body !== null && !body.complete) {
            res.shouldKeepAlive = false;
            body.abort();
          }
          if (response.close) res.shouldKeepAlive = false;
          if (!response.stream) {
            res.writeHead(response.status, withLength(response));
            res.end(response.body);
            return;
          }
          // node:http sends no body for HEAD, 204 and 304 by itself, but only we know the length.
          res.writeHead(response.status, {
            ...response.headers,
            'content-length': String(response.stream.length),
          });
          if (response.stream.chunks === null || response.stream.length === 0) res.end();
          else void streamAnswer(res, response.stream.length, response.stream.chunks);
        },
        () => {
          if (res.destroyed || res.headersSent) return void res.destroy();
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('internal error');
        },
      )
      // An answer node:http would not take (writeHead throws on a header value with a control
      // character) must not become an unhandled rejection, which ends the process: cut the
      // connection instead.
      .catch(() => res.destroy());
  };
  const server = createServer(serve);
  server.keepAliveTimeout = 10_000;

  return {
    name: 'node',
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      }),
    attachSocketIo(io: SocketIoServer) {
      io.attach(server);
      // engine.io now takes every request under its path; a browser's preflight there is the
      // service's to answer, as on uWS (server/app.ts says why).
      const engineIo = server.listeners('request') as ((...args: unknown[]) => void)[];
      server.removeAllListeners('request');
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        if (req.method === 'OPTIONS' && req.url?.startsWith(SOCKET_PATH)) serve(req, res);
        else for (const listener of engineIo) listener.call(server, req, res);
      });
    },
    handshakeWait(request) {
      // engine.io (and ws under it) let go of a destroyed socket themselves; this only spares
      // the work.
      const { socket } = request as IncomingMessage;
      return () => socket.destroyed;
    },
    stopListening() {
      if (!closed) closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle kept-alive connections would otherwise wait for a next request.
      server.closeIdleConnections();
    },
    async close(waitMs = 0) {
      this.stopListening();
      await requestsFinished(() => open.size, waitMs);
      for (const controller of open) controller.abort();
      server.closeAllConnections();
      await closed;
    },
    get openRequests() {
      return open.size;
    },
  };
}

/**
 * The headers of an answer written whole, with its length: node:http would send a body given
 * after writeHead in chunks, and drops a HEAD's body with its length. So GET says the length
 * of what it sends, and HEAD the length GET sends (as on uWS: uws-engine.ts).
 */
function withLength(response: EngineResponse): Record<string, string> {
  if (isBodyless(response.status)) return response.headers;
  return { ...response.headers, 'content-length': String(Buffer.byteLength(response.body)) };
}

/**
 * Writes a streamed answer with backpressure: when `write` says the socket is full, wait for
 * 'drain' (or the end of the connection) before pulling the next chunk from the source.
 */
async function streamAnswer(
  res: ServerResponse,
  length: number,
  chunks: AsyncIterable<Uint8Array>,
): Promise<void> {
  let sent = 0;
  try {
    // Leaving the loop (break, throw) ends the source's iterator, releasing what it holds.
    for await (const next of chunks) {
      if (res.destroyed) break;
      const chunk = next.subarray(0, length - sent);
      if (chunk.length === 0) {
        if (sent === length) break;
        continue;
      }
      sent += chunk.length;
      if (!res.write(chunk)) await drained(res);
    }
  } catch {
    // The source failed (the route logged it); the connection is closed below.
  }
  if (res.destroyed) return;
  // A source that ended short cannot finish the promised length: cut the connection.
  if (sent < length) res.destroy();
  else res.end();
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
