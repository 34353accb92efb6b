/**
 * The baseline of bench/idle-sockets.ts, run in a process of its own: socket.io on uWS (the
 * engine the service's sockets use) with no authentication, storage or feed, and a `/health`
 * route that answers at once. Prints `listening on <url>` on stderr, as the service does.
 */
import { Server } from 'socket.io';
import { loadUws } from '../server/http/uws-engine.ts';

const uws = loadUws();
if (!uws) throw new Error('uWebSockets.js does not load here');
const app = uws.App();
app.get('/health', (res) => {
  res.cork(() => {
    res.writeHeader('content-type', 'application/json').end('{"status":"ok"}');
  });
});
const io = new Server({ serveClient: false });
io.attachApp(app);
app.listen('127.0.0.1', 0, (listenSocket) => {
  if (!listenSocket) throw new Error('the bare socket.io server could not listen');
  process.stderr.write(`listening on http://127.0.0.1:${uws.us_socket_local_port(listenSocket)}\n`);
});
