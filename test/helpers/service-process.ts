import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestsEnd } from './resources.ts';
import { freshDatabaseUrl, TEST_DATABASE_URL } from './storage.ts';

const root = join(import.meta.dirname, '../..');
/** How long a service process may take to listen (or to exit, refusing) before it is killed. */
const START_DEADLINE_S = 180;
const main = join(root, 'build/server/main.js');

export interface ServiceProcess {
  pid: number;
  baseUrl: string;
  kill(signal: NodeJS.Signals): void;
  /** The exit code, or the signal that ended the process. */
  exited: Promise<number | NodeJS.Signals | null>;
  /** What the process wrote to stderr so far (its log, and why it died). */
  stderr(): string;
  /**
   * Ends the process (SIGTERM, then SIGKILL if it lingers) and removes its data directory
   * when this helper made it.
   */
  stop(): Promise<void>;
}

/**
 * Runs the service as `npm start` does: node itself runs the built JavaScript
 * (build/server/main.js, which test/run.ts brings up to date before any test, as `npm start`
 * does), so the pid held is the server's own and a signal sent to it reaches the server. On
 * port 0, with `env` on top of the test's own; `DATA_DIR` is a new temporary directory unless
 * `env` names one.
 */
/** The data directory (file blobs) of the processes started on each database. */
const dataDirsByDatabase = new Map<string, string>();
/** The test PostgreSQL database of each data directory given without a database. */
const databasesByDataDir = new Map<string, string>();

export async function startServiceProcess(
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  // Processes on one database share one blob store, as a deployment must (the service refuses
  // to start on another store than its database's: actors/files/blob-store-identity.ts).
  const shared = env.DATABASE_URL ? dataDirsByDatabase.get(env.DATABASE_URL) : undefined;
  const ownDataDir =
    env.DATA_DIR || shared ? null : mkdtempSync(join(tmpdir(), 'agent-service-process-'));
  if (ownDataDir && env.DATABASE_URL) {
    dataDirsByDatabase.set(env.DATABASE_URL, ownDataDir);
    onTestsEnd(async () => rmSync(ownDataDir, { recursive: true, force: true }));
  }
  const dataDir = env.DATA_DIR ?? shared ?? ownDataDir;
  // On the test PostgreSQL, a process given only a data directory gets a database of its own,
  // the same one each time for that directory (a restart finds its data): never the run's
  // shared DATABASE_URL, which processes of other data directories (other blob stores) use.
  let databaseUrl = env.DATABASE_URL;
  if (!databaseUrl && TEST_DATABASE_URL && dataDir) {
    databaseUrl = databasesByDataDir.get(dataDir) ?? (await freshDatabaseUrl());
    databasesByDataDir.set(dataDir, databaseUrl);
  }
  const child = spawn(process.execPath, ['--max-semi-space-size=8', main], {
    cwd: root,
    env: {
      ...process.env,
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      BASE_URL: '',
      // Tests sign up faster than an address may; 0 lifts the limits.
      RATE_LIMIT_PER_MINUTE: '0',
      SIGNUP_LIMIT_PER_HOUR: '0',
      ...(dataDir ? { DATA_DIR: dataDir } : {}),
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  let stderr = '';
  // Read stderr to the end, so that a chatty server never blocks on a full pipe.
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    // A directory shared by the processes of one database is removed at the end of the run.
    if (ownDataDir && !env.DATABASE_URL) rmSync(ownDataDir, { recursive: true, force: true });
  };
  try {
    // A start that neither listens nor exits fails the test that asked for it, with what the
    // process said, rather than holding the run.
    let deadline: NodeJS.Timeout | undefined;
    const baseUrl = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', () => {
        const found = /listening on (http:\/\/\S+)/.exec(stderr);
        if (found) resolve(found[1] as string);
      });
      void exited.then((code) =>
        reject(new Error(`the service exited with ${code} before listening: ${stderr}`)),
      );
      deadline = setTimeout(() => {
        child.kill('SIGKILL');
        reject(
          new Error(`the service neither listened nor exited in ${START_DEADLINE_S} s: ${stderr}`),
        );
      }, START_DEADLINE_S * 1000);
    }).finally(() => clearTimeout(deadline));
    return {
      pid: child.pid as number,
      baseUrl,
      kill: (signal) => void child.kill(signal),
      exited,
      stderr: () => stderr,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A JSON request to a service process (`body` as JSON), with the agent's token when given. */
export function callService(
  service: ServiceProcess,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<Response> {
  return fetch(service.baseUrl + path, {
    // A request the service never answers is a failure of its own, not a hung test.
    signal: AbortSignal.timeout(60_000),
    method,
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}
