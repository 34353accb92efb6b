import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { alive } from '../helpers/process-alive.ts';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { freshPgliteDir } from '../helpers/storage.ts';
import { within } from '../helpers/turns.ts';

interface Context {
  dataDir: string;
  /** Processes of the current test not yet seen to exit; the test's end kills them. */
  running: Set<ServiceProcess>;
}

/** The service as `npm start` runs it, on this test's data directory. */
async function startMain(context: Context): Promise<ServiceProcess> {
  const started = await startServiceProcess({ DATA_DIR: context.dataDir });
  context.running.add(started);
  void started.exited.then(() => context.running.delete(started));
  return started;
}

const authorized = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

async function unreadChanges(baseUrl: string, token: string): Promise<number> {
  const me = await fetch(`${baseUrl}/whoami`, authorized(token));
  return ((await me.json()) as { unread: { changes: number } }).unread.changes;
}

const test = suite<Context>('start-up contract: npm start, SIGTERM, restart');

test.before.each(async (context) => {
  // The embedded database lives under DATA_DIR/pglite; each test starts from a migrated copy.
  context.running = new Set();
  context.dataDir = mkdtempSync(join(tmpdir(), 'agent-service-main-'));
  // A copy, not a rename: the fresh directory may be on another file system (storage.ts).
  cpSync(await freshPgliteDir(), join(context.dataDir, 'pglite'), { recursive: true });
});

// Runs after a failing test too: no server outlives its test, and no data directory either.
test.after.each(async ({ running, dataDir }) => {
  for (const server of running) {
    server.kill('SIGKILL');
    await server.exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
});

test('the service starts, answers /health, stops promptly on SIGTERM despite a parked long-poll, and keeps what it acknowledged', async (context) => {
  const first = await startMain(context);
  const health = await fetch(`${first.baseUrl}/health`);
  assert.is(health.status, 200);
  const signUp = await fetch(`${first.baseUrl}/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'survivor' }),
  });
  assert.is(signUp.status, 201);
  const { api_token, agent_id } = (await signUp.json()) as { api_token: string; agent_id: string };
  assert.is(await unreadChanges(first.baseUrl, api_token), 1, 'the welcome is unread');

  // A long-poll with a minute left: reading its (empty) first page marks the welcome read,
  // so whoami counting nothing unread shows it has parked.
  const waiting = fetch(`${first.baseUrl}/changes/wait?timeout=60&after=c1`, authorized(api_token))
    .then(async (response) => ({ status: response.status, body: await response.json() }))
    .catch(() => 'cut' as const);
  let unread = 1;
  for (let i = 0; i < 500 && unread !== 0; i++)
    unread = await unreadChanges(first.baseUrl, api_token);
  assert.is(unread, 0, 'the long-poll has parked');

  first.kill('SIGTERM');
  assert.is(
    await within(first.exited, 20_000, 'exit after SIGTERM with a long-poll parked for 60 s'),
    0,
  );
  // The long-poll is answered with its empty page, or its connection is closed: never left
  // hanging until its time-out.
  const outcome = await waiting;
  if (outcome !== 'cut')
    assert.equal(outcome, { status: 200, body: { changes: [], cursor: 'c1' } });

  const second = await startMain(context);
  const me = await fetch(`${second.baseUrl}/whoami`, authorized(api_token));
  assert.is(me.status, 200);
  assert.is(((await me.json()) as { agent_id: string }).agent_id, agent_id);
  second.kill('SIGTERM');
  assert.is(await second.exited, 0);
});

test('what was acknowledged survives kill -9 in the middle of writes, and nothing is half-written', async (context) => {
  const first = await startMain(context);
  const acknowledged: string[] = [];
  let stop = false;
  // Four writers sign up in a loop; the process is killed once 40 sign-ups are acknowledged,
  // while others are still in flight.
  const writer = async (n: number) => {
    for (let i = 0; !stop; i++) {
      const response = await fetch(`${first.baseUrl}/agents`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `crash ${n}-${i}` }),
      }).catch(() => null);
      if (!response || response.status !== 201) return;
      acknowledged.push(((await response.json()) as { api_token: string }).api_token);
      if (acknowledged.length >= 40 && !stop) {
        stop = true;
        first.kill('SIGKILL');
      }
    }
  };
  await Promise.all([0, 1, 2, 3].map(writer));
  assert.ok(acknowledged.length >= 40, 'the writers reached the kill');
  assert.is(await first.exited, 'SIGKILL');
  // The signal reached the server itself: nothing of it still answers or holds the data
  // directory that the restart below opens.
  assert.not.ok(alive(first.pid), 'the killed process is gone');
  const answered = await fetch(`${first.baseUrl}/health`).then(
    () => true,
    () => false,
  );
  assert.not.ok(answered, 'nothing answers at the killed server address');

  const second = await startMain(context);
  for (const token of acknowledged) {
    const me = await fetch(`${second.baseUrl}/whoami`, authorized(token));
    assert.is(me.status, 200);
    const body = (await me.json()) as { unread: { changes: number } };
    assert.is(body.unread.changes, 1, 'every agent has its welcome change');
  }
  second.kill('SIGTERM');
  assert.is(await second.exited, 0);
});

test.run();
