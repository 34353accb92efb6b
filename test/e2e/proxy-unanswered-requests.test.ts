import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { METHODS } from 'node:http';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { haproxyConfigFor } from '../../deploy/cluster.ts';
import { loadUwsBinary } from '../../server/http/uws-load.ts';
import { clientSuite, HAPROXY } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The requests the uWS engine (20.30) never answers, and who answers them instead: the proxy of
 * deploy/ in front of uWS (deploy/haproxy.cfg's block, which the local cluster copies), and the
 * node:http engine by itself. The table is every printable ASCII character in a header name and
 * every method node:http knows, so a character or method the docs forget fails here.
 */
const test = clientSuite<{
  uws: TestServer;
  node: TestServer;
  proxyPort: number;
  haproxy: ChildProcess;
  directory: string;
}>('requests the uWS engine drops are answered, by the proxy or by node:http', HAPROXY);

/** What a header name may hold for uWS 20.30 to read it (README.md, /protocol). */
const READABLE_NAME_CHARACTER = /^[A-Za-z0-9-]$/;
/** The methods the proxy lets through: those the service routes (/protocol). */
const SERVED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** The characters HTTP allows in a header name (RFC 9110 `tchar`); haproxy refuses the others. */
const TOKEN_CHARACTER = /^[A-Za-z0-9!#$%&'*+.^_`|~-]$/;

/** Every printable ASCII character but `:`, which ends a header name. */
const NAME_CHARACTERS = Array.from({ length: 0x7f - 0x21 }, (_, i) =>
  String.fromCharCode(0x21 + i),
).filter((char) => char !== ':');

interface Reply {
  /** The status line's code, or undefined when the connection closed without a byte. */
  status?: number;
  body: string;
}

/** Sends raw bytes and waits for the connection to close (each request says `Connection: close`). */
function exchange(port: number, raw: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(received)?.[1];
      resolve({
        status: status === undefined ? undefined : Number(status),
        body: received.slice(received.indexOf('\r\n\r\n') + 4),
      });
    });
    socket.write(raw);
  });
}

const request = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;
const withHeader = (name: string) =>
  request(['GET /health HTTP/1.1', 'Host: x', `${name}: 1`, 'Connection: close']);
const withMethod = (method: string) =>
  request([`${method} /health HTTP/1.1`, 'Host: x', 'Content-Length: 0', 'Connection: close']);
const HTTP_1_0 = request(['GET /health HTTP/1.0', 'Host: x']);
const NO_HOST = request(['GET /health HTTP/1.1', 'Connection: close']);

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

test.before(async (context) => {
  context.uws = await startTestServer({ httpEngine: 'uws' });
  context.node = await startTestServer({ httpEngine: 'node' });
  context.directory = mkdtempSync(join(tmpdir(), 'agent-service-proxy-'));
  context.proxyPort = await freePort();
  const config = join(context.directory, 'haproxy.cfg');
  writeFileSync(
    config,
    haproxyConfigFor(context.proxyPort, await freePort(), [{ name: 'p1', port: context.uws.port }]),
  );
  context.haproxy = spawn(HAPROXY.probe[0], ['-db', '-f', config], { stdio: 'ignore' });
  // Ready once the proxy has found the process healthy and passes a request through.
  for (;;) {
    const reply = await exchange(context.proxyPort, withHeader('X-Ready')).catch(() => undefined);
    if (reply?.status === 200) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
});

test.after(async ({ uws, node, haproxy, directory }) => {
  haproxy.kill('SIGTERM');
  await Promise.all([uws.close(), node.close()]);
  rmSync(directory, { recursive: true, force: true });
});

function problemCode(reply: Reply): string | undefined {
  try {
    return (JSON.parse(reply.body) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

test('the proxy answers a header name holding anything but letters, digits and - with 400 header_name_unsupported, and passes the rest', async ({
  proxyPort,
}) => {
  const replies = await Promise.all(
    NAME_CHARACTERS.map((char) => exchange(proxyPort, withHeader(`X${char}Y`))),
  );
  const wrong = NAME_CHARACTERS.flatMap((char, at) => {
    const reply = replies[at] as Reply;
    // A character HTTP does not allow in a name at all is haproxy's own 400 (not ours to word).
    const expected = READABLE_NAME_CHARACTER.test(char)
      ? '200'
      : TOKEN_CHARACTER.test(char)
        ? '400 header_name_unsupported'
        : '400 undefined';
    const seen = reply.status === 200 ? '200' : `${reply.status} ${problemCode(reply)}`;
    return seen === expected ? [] : [`${JSON.stringify(char)}: ${seen}`];
  });
  assert.equal(wrong, []);
});

test('the proxy answers every method the service does not route with 501 method_not_implemented', async ({
  proxyPort,
}) => {
  // CONNECT is a proxy's own method: haproxy answers it itself.
  const methods = [...METHODS, 'QUERY', 'get', 'Post'].filter((method) => method !== 'CONNECT');
  const replies = await Promise.all(
    methods.map((method) => exchange(proxyPort, withMethod(method))),
  );
  const wrong = methods.flatMap((method, at) => {
    const reply = replies[at] as Reply;
    const refused = reply.status === 501 && problemCode(reply) === 'method_not_implemented';
    return refused === SERVED_METHODS.includes(method) ? [`${method}: ${reply.status}`] : [];
  });
  assert.equal(wrong, []);
});

test('the proxy answers HTTP/1.0 with 505 and HTTP/1.1 without Host with 400 host_required', async ({
  proxyPort,
}) => {
  const old = await exchange(proxyPort, HTTP_1_0);
  assert.equal([old.status, problemCode(old)], [505, 'http_version_not_supported']);
  const hostless = await exchange(proxyPort, NO_HOST);
  assert.equal([hostless.status, problemCode(hostless)], [400, 'host_required']);
});

test('the node:http engine answers each of these requests itself', async ({ node }) => {
  const requests = [
    ...NAME_CHARACTERS.map((char) => withHeader(`X${char}Y`)),
    ...[...METHODS, 'QUERY', 'get'].filter((m) => m !== 'CONNECT').map(withMethod),
    HTTP_1_0,
    NO_HOST,
  ];
  const replies = await Promise.all(requests.map((raw) => exchange(node.port, raw)));
  const unanswered = requests.filter((_, at) => replies[at]?.status === undefined);
  assert.equal(
    unanswered.map((raw) => raw.split('\r\n').slice(0, 3).join(' / ')),
    [],
  );
});

test('the uWS engine alone still drops them (when a build answers, README.md and /protocol change)', async ({
  uws,
}) => {
  // The connection ends (uWS's idle timeout for the first and third, at once for the others)
  // with no byte of an answer.
  const replies = await Promise.all(
    [withHeader('X_Y'), withMethod('QUERY'), HTTP_1_0, NO_HOST].map((raw) =>
      exchange(uws.port, raw),
    ),
  );
  assert.equal(
    replies.map((reply) => reply.status),
    [undefined, undefined, undefined, undefined],
  );
});

// Its subject is the uWS engine: where uWS does not load (Node 22, 24) there is nothing to run.
const { reason } = loadUwsBinary();
if (reason) console.log(`proxy-unanswered-requests: not run (${reason})`);
else test.run();
