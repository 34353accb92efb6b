import { connect, type Socket as TcpSocket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { io } from 'socket.io-client';
import { enginesHere } from '../helpers/engines.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A crowd of socket.io handshakes does not hold the service: engine.io takes each on a turn of
 * the event loop of its own (server/app.ts, `allowRequest`), so HTTP requests are answered
 * between two of them, and a handshake whose client left while it waited is dropped. (uWS is
 * where a crowd held the loop: it hands over every upgrade read in one poll, and without the
 * turns the first test fails there. node:http answered the request first even without them.)
 */
const CROWD = 300;

/** An engine.io WebSocket handshake, as a client sends it, on a raw connection. */
const UPGRADE =
  'GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\n' +
  'Host: localhost\r\n' +
  'Upgrade: websocket\r\n' +
  'Connection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
  'Sec-WebSocket-Version: 13\r\n\r\n';

/** `count` connections to the server, all open before any sends a byte. */
async function openConnections(server: TestServer, count: number): Promise<TcpSocket[]> {
  const { hostname, port } = new URL(server.url('/'));
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<TcpSocket>((resolve, reject) => {
          const socket = connect(Number(port), hostname, () => resolve(socket));
          socket.once('error', reject);
        }),
    ),
  );
}

for (const engine of enginesHere(import.meta.filename)) {
  const test = suite<{ server: TestServer }>(`a crowd of socket.io handshakes (${engine})`);

  test.before(async (context) => {
    context.server = await startTestServer({ httpEngine: engine });
  });
  test.after(async ({ server }) => {
    await server.close();
  });

  test('an HTTP request sent after a crowd of handshakes is answered before the crowd is through, and all of it gets through', async ({
    server,
  }) => {
    const [asker, ...connections] = await openConnections(server, CROWD + 1);
    const order: string[] = [];
    const answered = (connection: TcpSocket, name: string) =>
      new Promise<string>((resolve) => {
        let head = '';
        const onData = (chunk: Buffer) => {
          head += chunk.toString('latin1');
          if (!head.includes('\r\n')) return;
          connection.off('data', onData);
          order.push(name);
          resolve(head.slice(0, head.indexOf('\r\n')));
        };
        connection.on('data', onData);
      });
    const switched = connections.map((connection) => answered(connection, 'handshake'));
    const health = answered(asker!, '/health');
    // All in one go: the service reads them in one poll of the loop, the request last.
    for (const connection of connections) connection.write(UPGRADE);
    asker!.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.is(await health, 'HTTP/1.1 200 OK');
    const before = order.indexOf('/health');
    assert.ok(before < CROWD, `all ${CROWD} handshakes were answered before /health`);
    for (const status of await Promise.all(switched)) {
      assert.is(status, 'HTTP/1.1 101 Switching Protocols');
    }
    for (const connection of [asker!, ...connections]) connection.destroy();
  });

  test('handshakes whose clients leave while they wait are dropped, and the next client connects', async ({
    server,
  }) => {
    const connections = await openConnections(server, CROWD);
    const closed = connections.map(
      (connection) => new Promise((resolve) => connection.once('close', resolve)),
    );
    for (const connection of connections) connection.write(UPGRADE);
    for (const connection of connections) connection.destroy();
    await Promise.all(closed);

    const agent = await server.signUp();
    const socket = io(server.url('/'), {
      transports: ['websocket'],
      auth: { token: agent.api_token },
      reconnection: false,
      forceNew: true,
    });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('connect_error', reject);
      });
      assert.is((await fetch(server.url('/health'))).status, 200);
    } finally {
      socket.disconnect();
    }
  });

  test.run();
}
