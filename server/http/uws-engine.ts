import { STATUS_CODES } from 'node:http';
import { createRequire } from 'node:module';
import type { Server as SocketIoServer } from 'socket.io';
import type uWS from '@trufflesuite/uws-js-unofficial';
import { BodyCollector } from './body-collector.ts';
import { LazyAbort } from './abort.ts';
import type { EngineResponse, HttpEngine, RequestHandler } from './engine.ts';

type UWS = typeof uWS;

/**
 * uWebSockets.js, or null when its native binary cannot load here (Node 22+ gets a JS shim
 * that crashes later: STACK.md).
 */
export function loadUws(): UWS | null {
  try {
    const require = createRequire(import.meta.url);
    const module = require('@trufflesuite/uws-js-unofficial') as UWS;
    return typeof module.SSLApp === 'function' ? module : null;
  } catch {
    return null;
  }
}

const EMPTY = Buffer.alloc(0);

export function createUwsEngine(uws: UWS, handler: RequestHandler): HttpEngine {
  const app = uws.App();
  let listenSocket: uWS.us_listen_socket | null = null;
  const open = new Set<LazyAbort>();

  app.any('/*', (res, req) => {
    // `req` is valid only now: copy what we need before anything async.
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const query = req.getQuery() ?? '';
    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const headers: Record<string, string> = {};
    req.forEach((name, value) => {
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    });
    const controller = new LazyAbort();
    open.add(controller);
    let done = false;
    res.onAborted(() => {
      done = true;
      open.delete(controller);
      controller.abort();
      collector?.abort(new Error('client went away'));
    });
    // A request without a length or chunked encoding has no body: nothing to collect.
    const length = headers['content-length'];
    const hasBody = (length !== undefined && length !== '0') || 'transfer-encoding' in headers;
    const collector = hasBody
      ? new BodyCollector(length === undefined ? null : Number(length), () => {
          // Stop reading; the answer closes the connection.
        })
      : null;
    if (collector) {
      res.onData((chunk, isLast) => collector.push(Buffer.from(chunk.slice(0)), isLast));
    }

    const respond = (response: EngineResponse) => {
      if (done) return;
      done = true;
      open.delete(controller);
      res.cork(() => {
        res.writeStatus(`${response.status} ${STATUS_CODES[response.status] ?? ''}`);
        for (const [name, value] of Object.entries(response.headers)) res.writeHeader(name, value);
        res.end(response.body, response.close === true);
      });
    };
    handler({
      method,
      path,
      query,
      headers,
      remoteAddress,
      body: (limit) => (collector ? collector.read(limit) : Promise.resolve(EMPTY)),
      get signal() {
        return controller.signal;
      },
    }).then(respond, () =>
      respond({ status: 500, headers: { 'content-type': 'text/plain' }, body: 'internal error' }),
    );
  });

  return {
    name: 'uws',
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        app.listen(host, port, (socket) => {
          if (!socket) return reject(new Error(`cannot listen on ${host}:${port}`));
          listenSocket = socket;
          resolve(uws.us_socket_local_port(socket));
        });
      }),
    attachSocketIo(io: SocketIoServer) {
      io.attachApp(app);
    },
    async close() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = null;
      for (const controller of open) controller.abort();
    },
  };
}
