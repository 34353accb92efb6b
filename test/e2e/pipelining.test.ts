import { connect } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * HTTP/1.1 pipelining: requests written back to back on one connection before any answer. The
 * node:http engine answers them in order; uWebSockets.js does not support it behind an answer
 * that comes later (upstream #277, #1301) and closes the connection, which a client retries.
 * Either way the connection never hangs (README.md, "Configuration").
 */
const test = suite<{ server: TestServer }>('pipelined requests');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

/** Writes `count` GETs of `path` in one write; resolves with the status lines seen once closed. */
function pipelined(server: TestServer, path: string, count: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = connect(server.port, '127.0.0.1', () => {
      const request = `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
      // The last asks to close, so a server that answers them all ends the connection too.
      socket.write(
        request.repeat(count - 1) + request.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'),
      );
    });
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(received.match(/HTTP\/1\.1 \d{3}/g) ?? []));
  });
}

test('three pipelined GETs of /health are answered in order, or the connection closes', async ({
  server,
}) => {
  const statuses = await pipelined(server, '/health', 3);
  if (server.engine === 'node') {
    assert.equal(statuses, ['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200']);
  } else {
    // uWS: closed without a half-written answer; the client retries on a new connection.
    assert.ok(statuses.length < 3, `uWS answered ${statuses.length} of 3`);
  }
  const retried = await fetch(server.url('/health'));
  assert.is(retried.status, 200, 'a new connection is served as ever');
});

test.run();
