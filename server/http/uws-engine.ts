import { STATUS_CODES } from 'node:http';
import { createServer } from 'node:net';
import type { Server as SocketIoServer } from 'socket.io';
import type uWS from '@trufflesuite/uws-js-unofficial';
import { loadUwsBinary, type UWS } from './uws-load.ts';
import { isBodyless } from '../../protocol/binding.ts';
import { SOCKET_PATH } from '../../protocol/message-signature.ts';
import { BodyStream, ClientGone } from './body-stream.ts';
import { LazyAbort } from './abort.ts';
import { TakenRequest, type Peer } from './taken-request.ts';
import { GuardedResponse, type AbortListener } from './uws-response.ts';
import {
  dropStream,
  requestsFinished,
  type EngineResponse,
  type HttpEngine,
  type RequestHandler,
} from './engine.ts';

/** uWS's `listen(host, port, options, cb)`, which its typings leave out. */
type ListenWithOptions = (
  host: string,
  port: number,
  options: number,
  cb: (socket: uWS.us_listen_socket | false) => void,
) => void;
/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: no SO_REUSEPORT. */
const EXCLUSIVE_PORT = 1;

/**
 * uWebSockets.js, or null when its native binary cannot load here (uws-load.ts says why;
 * `HTTP_ENGINE=auto` then takes node:http: README.md, "Configuration").
 */
export function loadUws(): UWS | null {
  return loadUwsBinary().uws;
}

/** What a streamed answer waits on besides the socket: the client going away. */
interface Exchange {
  /** Called once on abort, by whoever waits on the socket (a streamed answer). */
  onAbort: (() => void) | null;
}

/** The answer when the handler itself failed (it answers every refusal as problem+json). */
const INTERNAL_ERROR: EngineResponse = {
  status: 500,
  headers: { 'content-type': 'text/plain' },
  body: 'internal error',
};

/**
 * One request on uWS, from its head to its answer: one object per request holds what the
 * answer needs (no closures made per request but the one uWS takes for an abort), and is the
 * body's pause/resume and the response's abort listener itself.
 */
class UwsExchange implements AbortListener, Peer {
  readonly controller = new LazyAbort();
  readonly res: GuardedResponse;
  readonly body: BodyStream | null;
  private paused = false;
  private address: string | undefined;
  /** Made only for a streamed answer: most answers are written at once. */
  private streaming: Exchange | null = null;

  constructor(
    uwsResponse: uWS.HttpResponse,
    private readonly method: string,
    headers: Record<string, string>,
    private readonly open: Set<LazyAbort>,
  ) {
    open.add(this.controller);
    // From here on `res` alone touches the response: no call reaches uWS after the abort or
    // the end (uws-response.ts).
    this.res = new GuardedResponse(uwsResponse, this);
    // A request without a length or chunked encoding has no body: nothing to collect.
    const length = headers['content-length'];
    const hasBody = (length !== undefined && length !== '0') || 'transfer-encoding' in headers;
    this.body = hasBody
      ? new BodyStream(length === undefined ? null : Number(length), this, headers['content-type'])
      : null;
    const body = this.body;
    if (body) {
      // Chunks that arrive after the answer (a refusal sent while the body still comes, often
      // in the same socket read as the request's head) never get here: see GuardedResponse.
      this.res.onData((chunk, isLast) => {
        // The ArrayBuffer is emptied after this callback: copy it.
        body.push(Buffer.from(chunk.slice(0)));
        if (isLast) body.end();
      });
    }
  }

  /**
   * The peer's address, read from uWS when first asked: the read makes a native ArrayBuffer,
   * which costs more than a small route's whole answer, and only the rate limits ask. They ask
   * before the answer; once it is sent or the client went away, uWS has nothing to read, so a
   * late first ask is refused as the client's leaving (never answered with a made-up address).
   */
  get remoteAddress(): string {
    if (this.address === undefined) {
      if (this.res.settled) throw new ClientGone();
      this.address = Buffer.from(this.res.remoteAddressAsText()).toString();
    }
    return this.address;
  }

  /** The client went away (GuardedResponse calls this once). */
  aborted(): void {
    this.open.delete(this.controller);
    this.controller.abort();
    this.body?.abort();
    this.streaming?.onAbort?.();
  }

  /** The body's source: holds the socket while the reader is behind. */
  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.res.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.res.resume();
  }

  /** Writes the handler's answer, or a 500 when it failed. */
  async answer(pending: Promise<EngineResponse>): Promise<void> {
    let response: EngineResponse;
    try {
      response = await pending;
    } catch {
      response = INTERNAL_ERROR;
    }
    try {
      this.respond(response);
    } catch {
      // An answer uWS would not take (a header it refuses) must not become an unhandled
      // rejection, which ends the process: cut the connection instead.
      this.open.delete(this.controller);
      this.res.close();
    }
  }

  private respond(response: EngineResponse): void {
    const res = this.res;
    const body = this.body;
    if (res.settled) return dropStream(response);
    // A paused socket writes unreliably; an unread rest of the body is dropped by closing.
    if (this.paused) {
      this.paused = false;
      res.resume();
    }
    const close = response.close === true || (body !== null && !body.complete);
    // Whoever still reads the body after the answer gets ClientGone instead of waiting for
    // chunks that are dropped from now on.
    if (body !== null && !body.complete) body.abort();
    const status = statusLine(response.status);
    if (response.stream && response.stream.chunks !== null && response.stream.length > 0) {
      const streaming: Exchange = { onAbort: null };
      this.streaming = streaming;
      void streamAnswer(res, status, response, streaming).finally(() =>
        this.open.delete(this.controller),
      );
      return;
    }
    this.open.delete(this.controller);
    res.cork(() => {
      res.writeStatus(status);
      const headers = response.headers;
      for (const name in headers) res.writeHeader(name, headers[name] as string);
      // uWS writes a body for HEAD if given one, and Content-Length: 0 for 204/304 unless
      // told there is no body.
      if (response.stream) endHeadersOnly(res, response.stream.length, close);
      else if (isBodyless(response.status)) {
        if (close) res.endWithoutBody(0, true);
        else res.endWithoutBody();
      } else if (this.method === 'HEAD')
        endHeadersOnly(res, Buffer.byteLength(response.body), close);
      else res.end(response.body, close);
    });
  }
}

/** `200 OK` and the like, made once per status. */
const statusLines = new Map<number, string>();

function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? ''}`;
    statusLines.set(status, line);
  }
  return line;
}

/** uWS names methods in lower case; the common ones are upper-cased without a new string. */
const METHODS: Readonly<Record<string, string>> = {
  get: 'GET',
  head: 'HEAD',
  post: 'POST',
  put: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  options: 'OPTIONS',
};

/** The headers of the request being copied (req.forEach runs synchronously). */
let copying: Record<string, string> = {};

function copyHeader(name: string, value: string): void {
  const earlier = copying[name];
  copying[name] = earlier === undefined ? value : `${earlier}, ${value}`;
}

/** A request's headers, lower-case names, repeated ones joined: `req` dies after the callback. */
function copyHeaders(req: uWS.HttpRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  copying = headers;
  req.forEach(copyHeader);
  copying = {};
  return headers;
}

export function createUwsEngine(uws: UWS, handler: RequestHandler): HttpEngine {
  const app = uws.App();
  let listenSocket: uWS.us_listen_socket | null = null;
  const open = new Set<LazyAbort>();

  const serve = (uwsResponse: uWS.HttpResponse, req: uWS.HttpRequest) => {
    // `req` is valid only now: copy what we need before anything async.
    const asked = req.getMethod();
    const method = METHODS[asked] ?? asked.toUpperCase();
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    const headers = copyHeaders(req);
    const exchange = new UwsExchange(uwsResponse, method, headers, open);
    const request = new TakenRequest(
      method,
      path,
      query,
      headers,
      exchange,
      exchange.body,
      exchange.controller,
    );
    void exchange.answer(handler(request));
  };
  app.any('/*', serve);
  // socket.io's path is engine.io's (`attachSocketIo`), but for a browser's preflight: that one
  // the service answers (uWS prefers a route for the method to `any` on the same path).
  app.options(SOCKET_PATH, serve);

  return {
    name: 'uws',
    async listen(host, port) {
      for (let attempt = 1; ; attempt++) {
        // Exclusive: uWS binds with SO_REUSEPORT unless told not to, and a second process
        // started on the same port would then share it silently (the kernel splitting the
        // connections between them) rather than be refused as node:http is.
        const socket = await new Promise<uWS.us_listen_socket | false>((resolve) =>
          (app as unknown as { listen: ListenWithOptions }).listen(
            host,
            port,
            EXCLUSIVE_PORT,
            resolve,
          ),
        );
        if (socket) {
          listenSocket = socket;
          return uws.us_socket_local_port(socket);
        }
        const failure = await listenFailure(host, port, attempt);
        if (failure.code || attempt === LISTEN_ATTEMPTS) throw failure;
        // Free again at once: another socket held the port for a moment. Try again.
      }
    },
    attachSocketIo(io: SocketIoServer) {
      io.attachApp(app);
    },
    handshakeWait(request) {
      const { res: response, headers } = request as {
        res: uWS.HttpResponse;
        headers: Record<string, string | undefined>;
      };
      // A WebSocket upgrade is answered in its handler, as engine.io does without the turns.
      // This uWS (20.30) mishandles one answered later, inside `res.cork` as engine.io answers:
      // after the upgrade its cork reads the HTTP state of what is now a WebSocket, and closed
      // about one new WebSocket in a thousand of a crowd at once, and every one whose handshake
      // said `Connection: close` (uNetworking/uWebSockets#1929, fixed upstream in 2026).
      // Upgrading outside the cork makes uWS.js warn at each, and with `Connection: close` it
      // crashed the process (measured; the upgrade builds the WebSocket on a closed socket).
      if (headers.upgrade?.toLowerCase() === 'websocket') return null;
      // engine.io's uWS server keeps the response on the request, and registered an abort
      // handler that does nothing; this one takes its place (uWS keeps one). engine.io would
      // answer an aborted response, and uWS throws at that.
      let gone = false;
      response.onAborted(() => {
        gone = true;
      });
      return () => gone;
    },
    stopListening() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = null;
    },
    async close(waitMs = 0) {
      this.stopListening();
      await requestsFinished(() => open.size, waitMs);
      for (const controller of open) controller.abort();
    },
    get openRequests() {
      return open.size;
    },
  };
}

/**
 * Ends an answer with headers only, saying `length` (HEAD, or an empty body). uWS's
 * `endWithoutBody(n)` with n > 0 leaves the response waiting for n bytes that never come, and
 * drops the next request on the kept-alive connection: so the length is written here and the
 * response ended as bodiless. (Where the connection closes anyway, that does not matter.)
 */
function endHeadersOnly(res: GuardedResponse, length: number, close: boolean): void {
  if (close || length === 0) {
    res.endWithoutBody(length, close);
    return;
  }
  res.writeHeader('content-length', String(length));
  res.endWithoutBody();
}

/**
 * Writes a streamed answer with backpressure: `tryEnd` hands uWS as much as the socket takes,
 * and `onWritable` says when to go on with the rest of the chunk (uWS backpressure). The source is
 * pulled only as fast as the client reads; when the client goes away its iterator is ended.
 */
async function streamAnswer(
  res: GuardedResponse,
  statusLine: string,
  response: EngineResponse,
  exchange: Exchange,
): Promise<void> {
  const { length, chunks } = response.stream as {
    length: number;
    chunks: AsyncIterable<Uint8Array>;
  };
  const iterator = chunks[Symbol.asyncIterator]();
  let sent = 0;
  let headed = false;
  let exhausted = false;
  try {
    while (!res.settled) {
      const next = await iterator.next();
      if (next.done) {
        exhausted = true;
        break;
      }
      if (res.settled) break;
      const chunk = next.value.subarray(0, length - sent);
      if (chunk.length === 0) continue;
      const offset = res.getWriteOffset();
      let ok = false;
      let finished = false;
      res.cork(() => {
        if (!headed) {
          headed = true;
          res.writeStatus(statusLine);
          for (const [name, value] of Object.entries(response.headers)) {
            res.writeHeader(name, value);
          }
        }
        [ok, finished] = res.tryEnd(chunk, length);
      });
      sent += chunk.length;
      if (!ok && !finished) await writable(res, chunk, offset, length, exchange);
    }
  } catch {
    // The source failed (the route logged it); the connection is closed below.
  } finally {
    if (!exhausted) await Promise.resolve(iterator.return?.()).catch(() => undefined);
  }
  // A source that ended short (or failed) cannot finish the promised length: close, so the
  // client sees a cut answer rather than waiting for bytes that never come. (After the whole
  // answer, or the client's abort, the response is settled and this does nothing.)
  res.close();
}

/** Resolves when uWS has taken the rest of `chunk`, or the client went away. */
function writable(
  res: GuardedResponse,
  chunk: Uint8Array,
  offset: number,
  length: number,
  exchange: Exchange,
): Promise<void> {
  return new Promise((resolve) => {
    exchange.onAbort = () => resolve();
    res.onWritable((writeOffset) => {
      const [ok, done] = res.tryEnd(chunk.subarray(writeOffset - offset), length);
      if (ok || done) {
        exchange.onAbort = null;
        resolve();
      }
      return ok;
    });
  });
}

/** Tries at listening when uWS fails and the port is free again at once (listenFailure). */
const LISTEN_ATTEMPTS = 3;

/**
 * uWS says only that listening failed, never why: the same listen through node:net, at once,
 * finds the system's reason (EADDRINUSE, EACCES, ...) to pass on in the error's `code`. When
 * that listen succeeds, another socket held the port for a moment only (a bind to port 0 or an
 * outgoing connection, which the system gives ports of its ephemeral range): no code, and after
 * the last attempt a message that says so.
 */
function listenFailure(
  host: string,
  port: number,
  attempt: number,
): Promise<NodeJS.ErrnoException> {
  const failure = new Error(`cannot listen on ${host}:${port}`) as NodeJS.ErrnoException;
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      failure.code = error.code;
      resolve(failure);
    });
    probe.listen(port, host, () =>
      probe.close(() => {
        failure.message =
          `the port was taken each time uWebSockets.js tried (${attempt} times) and free again ` +
          'at once: another socket held it for moments (EADDRINUSE: a bind to port 0 or an ' +
          "outgoing connection, if the port is in the system's ephemeral range)";
        resolve(failure);
      }),
    );
  });
}
