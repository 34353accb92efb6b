import { connect, type Socket as TcpSocket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { io } from 'socket.io-client';
import { enginesHere } from '../helpers/engines.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A crowd of socket.io handshakes does not hold the service: engine.io takes each new client's
 * first request on a turn of the event loop of its own (server/app.ts, `allowRequest`), so
 * other HTTP requests are answered between two of them, and one whose client left while it
 * waited is dropped. (uWS is where a crowd held the loop: it hands over every request read in
 * one poll, and without the turns the first test fails there; node:http answered the request
 * first even without them.) WebSocket upgrades on uWS do not wait: the last test is why.
 */
const CROWD = 300;

/** An engine.io polling handshake (socket.io-client's first request by default). */
const POLLING_HANDSHAKE =
  'GET /socket.io/?EIO=4&transport=polling HTTP/1.1\r\nHost: localhost\r\n\r\n';

/** An engine.io WebSocket handshake, as a client sends it, on a raw connection. */
const UPGRADE =
  'GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\n' +
  'Host: localhost\r\n' +
  'Upgrade: websocket\r\n' +
  'Connection: Upgrade\r\n' +
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
  'Sec-WebSocket-Version: 13\r\n\r\n';

/** A client's WebSocket text frame (masked, as a client must send it). */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  const masked = payload.map((byte, i) => byte ^ (mask[i % 4] as number));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

/**
 * Talks engine.io and socket.io over `connection`, a handshake already sent: the 101, the open
 * packet, then a CONNECT packet and the server's answer to it (a refusal without a token). It
 * resolves with how far the talk got: 'answered', or where the connection closed.
 */
function converse(connection: TcpSocket): Promise<string> {
  return new Promise((resolve) => {
    let bytes = Buffer.alloc(0);
    let stage = 'waiting for the 101';
    connection.on('close', () => resolve(`closed while ${stage}`));
    connection.on('data', (chunk: Buffer) => {
      bytes = Buffer.concat([bytes, chunk]);
      if (stage === 'waiting for the 101') {
        const end = bytes.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!bytes.subarray(0, end).toString('latin1').startsWith('HTTP/1.1 101')) {
          resolve(`answered ${bytes.subarray(0, end).toString('latin1').split('\r\n')[0]}`);
          return;
        }
        bytes = bytes.subarray(end + 4);
        stage = 'waiting for the open packet';
      }
      // The server's frames are unmasked text frames; engine.io's are short here.
      while (bytes.length >= 2) {
        const length = (bytes[1] as number) & 0x7f;
        const start = length === 126 ? 4 : 2;
        const size = length === 126 ? bytes.readUInt16BE(2) : length;
        if (bytes.length < start + size) return;
        const packet = bytes.subarray(start, start + size).toString('utf8');
        bytes = bytes.subarray(start + size);
        if (stage === 'waiting for the open packet' && packet.startsWith('0')) {
          stage = 'waiting for the answer to CONNECT';
          connection.write(textFrame('40'));
        } else if (stage === 'waiting for the answer to CONNECT' && packet.startsWith('4')) {
          resolve('answered');
          connection.destroy();
          return;
        }
      }
    });
  });
}

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
    const handshakes = connections.map((connection) => answered(connection, 'handshake'));
    const health = answered(asker!, '/health');
    // All in one go: the service reads them in one poll of the loop, the request last.
    for (const connection of connections) connection.write(POLLING_HANDSHAKE);
    asker!.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.is(await health, 'HTTP/1.1 200 OK');
    const before = order.indexOf('/health');
    assert.ok(before < CROWD, `all ${CROWD} handshakes were answered before /health`);
    for (const status of await Promise.all(handshakes)) assert.is(status, 'HTTP/1.1 200 OK');
    for (const connection of [asker!, ...connections]) connection.destroy();
  });

  test('each WebSocket handshake of a crowd that says Connection: close is answered, and a WebSocket it opens stays open', async ({
    server,
  }) => {
    // uWS 20.30 closes a WebSocket upgraded after its handler returned, inside `res.cork`,
    // when the handshake said `Connection: close` (server/http/uws-engine.ts, `handshakeWait`):
    // had the upgrades waited for their turns, every one of these would close. node:http
    // refuses such a handshake (400), which is an answer too.
    const connections = await openConnections(server, CROWD);
    const talks = connections.map(converse);
    const handshake = UPGRADE.replace('Connection: Upgrade', 'Connection: close');
    for (const connection of connections) connection.write(handshake);
    const outcomes = await Promise.all(talks);
    const refused = 'answered HTTP/1.1 400 Bad Request';
    assert.equal(
      outcomes.filter((outcome) => outcome !== 'answered' && outcome !== refused),
      [],
    );
    assert.ok(engine === 'node' || !outcomes.includes(refused), 'uWS refused an upgrade');
  });

  test('handshakes whose clients leave while they wait are dropped, and the next client connects', async ({
    server,
  }) => {
    const connections = await openConnections(server, CROWD);
    const closed = connections.map(
      (connection) => new Promise((resolve) => connection.once('close', resolve)),
    );
    for (const connection of connections) connection.write(POLLING_HANDSHAKE);
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
