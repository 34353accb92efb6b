import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '../..');
const main = join(root, 'server/main.ts');

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
 * Runs the service as `npm start` does: node itself runs server/main.ts with tsx as a loader,
 * so the pid held is the server's own and a signal sent to it reaches the server. (The tsx
 * CLI would run the server in a child process of its own, which a SIGKILL leaves running.)
 * On port 0, with `env` on top of the test's own; `DATA_DIR` is a new temporary directory
 * unless `env` names one.
 */
export async function startServiceProcess(
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  const ownDataDir = env.DATA_DIR ? null : mkdtempSync(join(tmpdir(), 'agent-service-process-'));
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
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
      ...(ownDataDir ? { DATA_DIR: ownDataDir } : {}),
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
    if (ownDataDir) rmSync(ownDataDir, { recursive: true, force: true });
  };
  try {
    const baseUrl = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', () => {
        const found = /listening on (http:\/\/\S+)/.exec(stderr);
        if (found) resolve(found[1] as string);
      });
      void exited.then((code) =>
        reject(new Error(`the service exited with ${code} before listening: ${stderr}`)),
      );
    });
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
