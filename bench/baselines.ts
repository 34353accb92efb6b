import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server as SocketIoServer, type Socket } from 'socket.io';
import type uWS from '@trufflesuite/uws-js-unofficial';
import { loadUws } from '../server/http/uws-engine.ts';

/** What a baseline hands back: where it listens and how to stop it. */
export interface Baseline {
  baseUrl: string;
  close(): Promise<void>;
}

const HELLO = JSON.stringify({ hello: 'world' });

/**
 * The ceiling for `GET /whoami`: uWS answering a small JSON body with no routing, auth or
 * storage. Loaded the way the service loads it, so both run the same native binary.
 */
export async function startRawUws(): Promise<Baseline> {
  const uws = loadUws();
  if (!uws) throw new Error('uWebSockets.js cannot load on this Node.js');
  const app = uws.App().any('/*', (res) => {
    res.cork(() => res.writeHeader('content-type', 'application/json').end(HELLO));
  });
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (listen) =>
      listen ? resolve(listen) : reject(new Error('raw uWS cannot listen')),
    ),
  );
  return {
    baseUrl: `http://127.0.0.1:${uws.us_socket_local_port(socket)}`,
    async close() {
      // Stops accepting; the load generator has already closed its connections.
      uws.us_listen_socket_close(socket);
    },
  };
}

/**
 * The floor for write-to-push: socket.io on node:http with no auth and no storage. `POST /emit`
 * answers `{feedback_id}` and emits a `change` shaped like the service's to one socket, named
 * by the `x-socket` header, so the client times both the same way.
 */
export async function startRawSocketIo(): Promise<Baseline> {
  const sockets = new Map<string, Socket>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const target = sockets.get(String(req.headers['x-socket']));
      if (req.method !== 'POST' || req.url !== '/emit' || !target) {
        res.writeHead(404).end();
        return;
      }
      const feedbackId = randomUUID();
      target.emit('change', { type: 'feedback.received', data: { feedback_id: feedbackId } });
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ feedback_id: feedbackId }));
    });
  });
  const io = new SocketIoServer(server, { serveClient: false });
  io.on('connection', (socket) => {
    sockets.set(socket.id, socket);
    socket.on('disconnect', () => sockets.delete(socket.id));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      io.disconnectSockets(true);
      server.closeAllConnections();
      await io.close();
    },
  };
}
