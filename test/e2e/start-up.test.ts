import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { onTestsEnd } from '../helpers/resources.ts';
import { freshPgliteDir } from '../helpers/storage.ts';

const tsx = join(import.meta.dirname, '../../node_modules/tsx/dist/cli.mjs');
const main = join(import.meta.dirname, '../../server/main.ts');

interface Started {
  child: ChildProcess;
  baseUrl: string;
  exited: Promise<number | null>;
}

/** Runs the service as `npm start` does, on port 0, and waits for its "listening" line. */
async function startMain(dataDir: string): Promise<Started> {
  const child = spawn(process.execPath, [tsx, main], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      BASE_URL: '',
      // The crash test signs up faster than an address may; 0 lifts the limits.
      RATE_LIMIT_PER_MINUTE: '0',
      SIGNUP_LIMIT_PER_HOUR: '0',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  onTestsEnd(async () => {
    child.kill('SIGKILL');
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let text = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const found = /listening on (http:\/\/\S+)/.exec(text);
      if (found) resolve(found[1] as string);
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before listening: ${text}`)));
  });
  return { child, baseUrl, exited };
}

const test = suite<{ dataDir: string }>('start-up contract: npm start, SIGTERM, restart');

test.before(async (context) => {
  // The embedded database lives under DATA_DIR/pglite; start from the migrated template.
  context.dataDir = mkdtempSync(join(tmpdir(), 'agent-service-main-'));
  cpSync(await freshPgliteDir(), join(context.dataDir, 'pglite'), { recursive: true });
});

test('the service starts, answers /health, stops cleanly on SIGTERM and keeps what it acknowledged', async ({
  dataDir,
}) => {
  const first = await startMain(dataDir);
  const health = await fetch(`${first.baseUrl}/health`);
  assert.is(health.status, 200);
  const signUp = await fetch(`${first.baseUrl}/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'survivor' }),
  });
  assert.is(signUp.status, 201);
  const { api_token, agent_id } = (await signUp.json()) as { api_token: string; agent_id: string };
  // A long-poll in flight must not hold the shutdown up.
  const waiting = fetch(`${first.baseUrl}/changes/wait?timeout=60&after=c1`, {
    headers: { authorization: `Bearer ${api_token}` },
  }).then(
    (response) => response.status,
    () => 'aborted',
  );
  await fetch(`${first.baseUrl}/whoami`, { headers: { authorization: `Bearer ${api_token}` } });
  first.child.kill('SIGTERM');
  assert.is(await first.exited, 0);
  assert.ok(await waiting);

  const second = await startMain(dataDir);
  const me = await fetch(`${second.baseUrl}/whoami`, {
    headers: { authorization: `Bearer ${api_token}` },
  });
  assert.is(me.status, 200);
  assert.is(((await me.json()) as { agent_id: string }).agent_id, agent_id);
  second.child.kill('SIGTERM');
  assert.is(await second.exited, 0);
});

test('what was acknowledged survives kill -9 in the middle of writes, and nothing is half-written', async ({
  dataDir,
}) => {
  const first = await startMain(dataDir);
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
        first.child.kill('SIGKILL');
      }
    }
  };
  await Promise.all([0, 1, 2, 3].map(writer));
  await first.exited;

  const second = await startMain(dataDir);
  for (const token of acknowledged) {
    const me = await fetch(`${second.baseUrl}/whoami`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.is(me.status, 200);
    const body = (await me.json()) as { unread: { changes: number } };
    assert.is(body.unread.changes, 1, 'every agent has its welcome change');
  }
  second.child.kill('SIGTERM');
  assert.is(await second.exited, 0);
});

test.run();
