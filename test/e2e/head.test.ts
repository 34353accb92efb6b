import type { IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enginesHere } from '../helpers/engines.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { send, type Answer } from '../helpers/transport.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * `curl -I` and every client that asks HEAD before it reads: wherever GET answers, HEAD answers
 * the same status and headers (Content-Length of the body GET sends, ETag where GET has one)
 * with no body, on both engines. The router answers a HEAD with the path's GET route
 * (server/http/router.ts); the engines drop the body.
 */
interface Context {
  server: TestServer;
  token: string;
  workspaceId: string;
}

/** Headers that may differ between two answers to the same question: the clock's. */
function comparable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const rest = { ...headers };
  delete rest.date;
  return rest;
}

/** Asks GET and then HEAD of `path` and checks that HEAD is GET without the body. */
async function headMatchesGet(
  server: TestServer,
  path: string,
  status: number,
  headers: Record<string, string> = {},
): Promise<{ get: Answer; head: Answer }> {
  const get = await send(server, 'GET', path, { headers });
  const head = await send(server, 'HEAD', path, { headers });
  assert.is(get.status, status, `GET ${path}: ${get.body.toString()}`);
  assert.is(head.status, status, `HEAD ${path}`);
  assert.ok(get.body.length > 0, `GET ${path} sends a body`);
  assert.is(head.headers['content-length'], String(get.body.length), `HEAD ${path}'s length`);
  assert.equal(comparable(head.headers), comparable(get.headers), `HEAD ${path}'s headers`);
  assert.is(head.body.length, 0);
  await noBodyOnTheWire(server, path, headers);
  return { get, head };
}

/**
 * A HEAD and then, once its headers have come, a GET on the same connection: the GET's status
 * line must follow the HEAD's headers at once. (A client reading a HEAD answer never reads a
 * body, so a body sent anyway shows only on the wire, where it corrupts the next answer.)
 */
function noBodyOnTheWire(
  server: TestServer,
  path: string,
  headers: Record<string, string>,
): Promise<void> {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1', () =>
      socket.write(`HEAD ${path} HTTP/1.1\r\nHost: x\r\n${lines.join('')}\r\n`),
    );
    let raw = '';
    let asked = false;
    socket.on('data', (chunk) => {
      raw += chunk.toString();
      if (asked || !raw.includes('\r\n\r\n')) return;
      asked = true;
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        const after = raw.slice(raw.indexOf('\r\n\r\n') + 4);
        assert.ok(asked, `HEAD ${path} was not answered: ${raw}`);
        assert.ok(after.startsWith('HTTP/1.1 200'), `HEAD ${path} sent a body: ${raw}`);
        resolve();
      } catch (error) {
        reject(error as Error);
      }
    });
  });
}

for (const engine of enginesHere(import.meta.filename)) {
  const test = suite<Context>(`HEAD answers what GET answers, without the body (${engine})`);

  test.before(async (context) => {
    context.server = await startTestServer({ httpEngine: engine });
    const owner = await context.server.signUp();
    context.token = owner.api_token;
    context.workspaceId = await newWorkspace(context.server, owner);
    await saveFile(context.server, owner, context.workspaceId, 'notes/head.txt', 'hello, HEAD');
  });
  test.after(async ({ server }) => {
    await server.close();
  });

  test('HEAD /health answers the status and headers of GET /health', async ({ server }) => {
    const { head } = await headMatchesGet(server, '/health', 200);
    assert.match(String(head.headers['content-type']), /application\/json/);
  });

  test('HEAD on the reference documents answers as GET does', async ({ server }) => {
    for (const path of ['/llms.txt', '/openapi.json']) await headMatchesGet(server, path, 200);
  });

  test('HEAD on a JSON operation answers as its GET, for anyone and for an agent', async ({
    server,
    token,
  }) => {
    await headMatchesGet(server, '/store', 200);
    await headMatchesGet(server, '/store', 200, { accept: 'application/json' });
    const { head } = await headMatchesGet(server, '/whoami', 200, {
      authorization: `Bearer ${token}`,
    });
    assert.match(String(head.headers['content-type']), /application\/json/);
  });

  test("a refused HEAD answers the refusal's status and headers, without its body", async ({
    server,
  }) => {
    const { head } = await headMatchesGet(server, '/whoami', 401);
    assert.ok(head.headers['www-authenticate'], 'the 401 says how to authenticate');
    await headMatchesGet(server, '/no/such/route', 404);
  });

  test('HEAD on a file answers its ETag and length, as GET does', async ({
    server,
    token,
    workspaceId,
  }) => {
    const { head } = await headMatchesGet(
      server,
      `/workspaces/${workspaceId}/files/notes/head.txt`,
      200,
      {
        authorization: `Bearer ${token}`,
      },
    );
    assert.ok(head.headers.etag, 'an ETag');
    assert.is(head.headers['content-length'], String('hello, HEAD'.length));
  });

  test('where GET is allowed, Allow and preflights name HEAD with it', async ({ server }) => {
    const refused = await send(server, 'DELETE', '/whoami');
    assert.is(refused.status, 405);
    assert.is(refused.headers.allow, 'GET, HEAD');
    for (const path of ['/whoami', '/llms.txt']) {
      const preflight = await send(server, 'OPTIONS', path, {
        headers: { origin: 'https://agent.example', 'access-control-request-method': 'HEAD' },
      });
      assert.is(preflight.status, 204, path);
      assert.is(preflight.headers['access-control-allow-methods'], 'GET, HEAD, OPTIONS', path);
    }
  });

  test.run();
}
