import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { io as connect, type Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { PAIRS_PER_NOTIFICATION } from '../../storage/kernel/changes.ts';
import { newToken } from '../../actors/kernel/tokens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Two servers on one PostgreSQL serve one store: a watch saved on one hears of a listing
 * posted on the other, a convention placed on one is placed on the other (its actor's copy
 * there is told), and two first listings of one agent at once make one listings workspace.
 */
const test = postgresSuite<{ a: TestServer; b: TestServer; operator: string }>(
  'two servers serve one store at once',
);

const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-shared-'));

test.before(async (context) => {
  const databaseUrl = await freshDatabaseUrl();
  context.operator = newToken();
  context.a = await startTestServer({ databaseUrl, dataDir, operatorToken: context.operator });
  context.b = await startTestServer({ databaseUrl, dataDir, operatorToken: context.operator });
});
test.after(async ({ a, b }) => {
  await a.close();
  await b.close();
  rmSync(dataDir, { recursive: true, force: true });
});

type Json = Record<string, unknown>;
async function call(server: TestServer, method: string, path: string, token: string, body?: Json) {
  const response = await fetch(server.url(path), {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

const bikeRepair = (place: string) => ({
  kind: 'can',
  convention: 'local-services',
  name: `Bike repair in ${place}`,
  description: 'Brakes and gears.',
  can: 'Fix bikes',
  dimensions: { service: 'bike repair', location: place },
});

test('a watch saved on one server hears of a listing posted on the other', async ({ a, b }) => {
  const watcher = await a.signUp();
  const poster = await b.signUp();
  await call(a, 'GET', '/changes', watcher.api_token);
  const watch = await call(a, 'POST', '/watches', watcher.api_token, {
    convention: 'local-services',
    axis: 'place',
    value: 'Leipzig',
  });
  assert.is(watch.status, 201);
  const waiting = call(a, 'GET', '/changes/wait?timeout=30', watcher.api_token);
  const posted = await call(b, 'POST', '/listings', poster.api_token, bikeRepair('Leipzig'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const heard = (await waiting).body.changes as { type: string; data: { listing: Json } }[];
  assert.is(heard[0]?.type, 'listing.posted');
  assert.is(heard[0]?.data.listing.listing_id, posted.body.listing_id);
});

test('a listing that reaches more watchers than one notification names wakes each on the other server', async ({
  a,
  b,
}) => {
  // This many need three notifications.
  const count = Math.ceil(PAIRS_PER_NOTIFICATION * 2.3);
  const watchers: { agent_id: string; api_token: string }[] = [];
  for (let i = 0; i < count; i += 25) {
    watchers.push(...(await Promise.all(Array.from({ length: 25 }, () => a.signUp()))));
  }
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      watchers.slice(i, i + 25).map(async (watcher) => {
        const watch = await call(a, 'POST', '/watches', watcher.api_token, {
          convention: 'local-services',
          axis: 'place',
          value: 'Görlitz',
        });
        assert.is(watch.status, 201);
      }),
    );
  }
  const sockets: Socket[] = [];
  try {
    const heard = watchers.map((watcher) => {
      const socket = connect(a.baseUrl, {
        auth: { token: watcher.api_token },
        transports: ['websocket'],
        reconnection: false,
      });
      sockets.push(socket);
      return new Promise<string>((resolve) =>
        socket.on('change', (event: { type: string; data: { listing: Json } }) => {
          if (event.type === 'listing.posted') resolve(event.data.listing.listing_id as string);
        }),
      );
    });
    await Promise.all(
      sockets.map(
        (socket) => new Promise<void>((resolve) => socket.on('connect', () => resolve())),
      ),
    );
    const poster = await b.signUp();
    const posted = await call(b, 'POST', '/listings', poster.api_token, bikeRepair('Görlitz'));
    assert.is(posted.status, 201, JSON.stringify(posted.body));
    const listingIds = await Promise.all(heard);
    assert.ok(listingIds.every((id) => id === posted.body.listing_id));
  } finally {
    for (const socket of sockets) socket.disconnect();
  }
});

test('a convention placed on one server is shown placed by the other, which had read it', async ({
  a,
  b,
  operator,
}) => {
  const author = await a.signUp();
  const registered = await call(a, 'POST', '/conventions', author.api_token, {
    name: 'piano-tuning',
    description: 'Tuning and regulating acoustic pianos at home.',
    dimensions: [
      { key: 'piano_type', label: 'Piano type', description: 'upright or grand' },
      { key: 'city', label: 'City', description: 'Where the piano is', axis: 'place' },
      { key: 'fee', label: 'Fee', description: 'Per tuning', axis: 'price' },
      { key: 'pitch', label: 'Pitch', description: 'e.g. A440' },
      { key: 'availability', label: 'Availability', description: 'Weekdays, evenings...' },
    ],
  });
  assert.is(registered.status, 201, JSON.stringify(registered.body));
  const before = await call(b, 'GET', '/conventions/piano-tuning', author.api_token);
  assert.is(before.body.status, 'unplaced');
  const placed = await call(a, 'POST', '/conventions/piano-tuning/place', operator, {
    path: ['root', 'local', 'music'],
  });
  assert.is(placed.status, 200, JSON.stringify(placed.body));
  const after = await call(b, 'GET', '/conventions/piano-tuning', author.api_token);
  assert.equal([after.body.status, after.body.placement], ['placed', ['root', 'local', 'music']]);
});

test('two first listings of one agent on both servers at once make one listings workspace', async ({
  a,
  b,
}) => {
  const agent = await a.signUp();
  const [one, two] = await Promise.all([
    call(a, 'POST', '/listings', agent.api_token, bikeRepair('Dresden')),
    call(b, 'POST', '/listings', agent.api_token, bikeRepair('Halle')),
  ]);
  assert.is(one.status, 201, JSON.stringify(one.body));
  assert.is(two.status, 201, JSON.stringify(two.body));
  assert.is(one.body.workspace_id, two.body.workspace_id);
});

test.run();
