import { connect } from 'socket.io-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer } from '../helpers/server.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * SIGTERM (server.close()) behind a proxy: first a drain, while /health answers 503 so the
 * proxy sends work elsewhere and every request is still served; then parked long-polls answer
 * at once, sockets lose their connection (so socket.io clients reconnect by themselves, with
 * their cursor) and requests in flight finish before storage closes.
 */
const test = suite('a stopping process drains before it stops');

test('during the drain /health answers 503 draining while requests are still served, a parked long-poll answers at once, a socket reconnects by itself, and an upload in flight is saved', async () => {
  const server = await startTestServer({ shutdownDrainMs: 300, shutdownTimeoutMs: 10_000 });
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);

  // A socket with reconnection on, as clients run: the reason it is told decides whether
  // socket.io-client comes back by itself.
  const socket = connect(server.baseUrl, {
    auth: { token: agent.api_token },
    transports: ['websocket'],
    reconnectionDelay: 60_000,
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const lost = new Promise<string>((resolve) => socket.once('disconnect', resolve));

  // An upload whose body is held back until the process has begun to stop.
  let sendRest: (() => void) | null = null;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('first half, '));
      sendRest = () => {
        controller.enqueue(new TextEncoder().encode('second half'));
        controller.close();
      };
    },
  });
  const upload = fetch(server.url(`/workspaces/${workspaceId}/files/held.txt`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body,
    duplex: 'half',
  } as RequestInit);
  // The upload has reached the handler once the server counts it open.
  while (server.openHttpRequests() === 0) await new Promise((resolve) => setImmediate(resolve));

  // Nothing unread, so the long-poll parks.
  assert.is((await server.get('/changes?limit=500', agent.api_token)).status, 200);
  const longPoll = fetch(server.url('/changes/wait?timeout=60'), {
    headers: { authorization: `Bearer ${agent.api_token}` },
  });
  const closed = server.close();

  const health = await server.get('/health');
  assert.is(health.status, 503);
  assert.is(((await health.json()) as { status: string }).status, 'draining');
  const whoami = await server.get('/whoami', agent.api_token);
  assert.is(whoami.status, 200, 'a request during the drain is served');

  const polled = await longPoll;
  assert.is(polled.status, 200);
  assert.equal(((await polled.json()) as { changes: unknown[] }).changes, []);
  assert.is(await lost, 'transport close', 'the socket is told nothing that stops it reconnecting');
  socket.disconnect();

  (sendRest as unknown as () => void)();
  const saved = await upload;
  assert.is(saved.status, 201, await saved.clone().text());
  await closed;
  assert.is(server.openHttpRequests(), 0);
});

test('without a drain, an upload in flight when the process begins to stop is still saved', async () => {
  const server = await startTestServer({ shutdownDrainMs: 0, shutdownTimeoutMs: 10_000 });
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  let sendRest: (() => void) | null = null;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('a'));
      sendRest = () => controller.close();
    },
  });
  const upload = fetch(server.url(`/workspaces/${workspaceId}/files/slow.txt`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body,
    duplex: 'half',
  } as RequestInit);
  while (server.openHttpRequests() === 0) await new Promise((resolve) => setImmediate(resolve));
  const closed = server.close();
  (sendRest as unknown as () => void)();
  assert.is((await upload).status, 201, 'the request in flight finishes');
  await closed;
});

test.run();
