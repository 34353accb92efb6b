import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server as SocketIoServer } from 'socket.io';
import { BodyCollector } from './body-collector.ts';
import { LazyAbort } from './abort.ts';
import type { HttpEngine, RequestHandler } from './engine.ts';

/** node:http behind the same seam: used where uWS cannot load, or with HTTP_ENGINE=node. */
export function createNodeEngine(handler: RequestHandler): HttpEngine {
  const open = new Set<LazyAbort>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const controller = new LazyAbort();
    open.add(controller);
    const length = headers['content-length'];
    const collector = new BodyCollector(length === undefined ? null : Number(length), () =>
      req.pause(),
    );
    req.on('data', (chunk: Buffer) => collector.push(chunk, false));
    req.on('end', () => collector.end());
    res.on('close', () => {
      open.delete(controller);
      if (!res.writableFinished) {
        controller.abort();
        collector.abort(new Error('client went away'));
      }
    });
    handler({
      method: (req.method ?? 'GET').toUpperCase(),
      path: mark === -1 ? url : url.slice(0, mark),
      query: mark === -1 ? '' : url.slice(mark + 1),
      headers,
      remoteAddress: req.socket.remoteAddress ?? '',
      body: (limit) => collector.read(limit),
      get signal() {
        return controller.signal;
      },
    }).then(
      (response) => {
        if (res.destroyed) return;
        if (response.close) res.shouldKeepAlive = false;
        res.writeHead(response.status, response.headers);
        res.end(response.body);
      },
      () => {
        if (res.destroyed) return;
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error');
      },
    );
  });
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
    },
    async close() {
      for (const controller of open) controller.abort();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
