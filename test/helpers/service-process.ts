import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '../..');
const main = join(root, 'server/main.ts');

export interface ServiceProcess {
  pid: number;
  baseUrl: string;
  /** Ends the process (SIGTERM, then SIGKILL if it lingers) and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * The service as a real process, started as `npm start` starts it (node with tsx as a loader,
 * so the pid held is the server's own), on port 0, with `env` on top of the test's own.
 */
export async function startServiceProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-process-'));
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    cwd: root,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      BASE_URL: '',
      RATE_LIMIT_PER_MINUTE: '0',
      SIGNUP_LIMIT_PER_HOUR: '0',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const baseUrl = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', () => {
        const found = /listening on (http:\/\/\S+)/.exec(stderr);
        if (found) resolve(found[1] as string);
      });
      void exited.then(() => reject(new Error(`the service exited before listening: ${stderr}`)));
    });
    return { pid: child.pid as number, baseUrl, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
