/**
 * Idle memory of the real service on PGlite: started on a new DATA_DIR, then again on the same
 * data (the baseline: a restart never ran initdb), each time as `npm start` runs it (`node
 * build/server/main.js`, built first by deploy/build.mjs) with PORT=0, read once /health answers 200 and the process has settled.
 * Prints the resident set (VmRSS) and its peak (VmHWM) from /proc/<pid>/status.
 *
 * Each figure line names its start first and gives the idle MB first (bench/idle-rss-section.ts
 * reads them). Linux only: /proc.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pgliteImagePath } from '../storage/pglite/image.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// What `npm start` runs is the built JavaScript: brought up to date first, as it does.
execFileSync(process.execPath, [`${ROOT}deploy/build.mjs`], { stdio: 'inherit' });
/** After /health first answers: lets start-up's garbage be collected and timers settle. */
const SETTLE_MS = 2000;
const START_LIMIT_MS = 120_000;

interface Figures {
  idleMb: number;
  peakMb: number;
  readyMs: number;
}

function memory(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

/** Resolves with the base URL the service logs once it listens. */
function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(
      () => reject(new Error(`no "listening on" within ${START_LIMIT_MS} ms: ${log.slice(-500)}`)),
      START_LIMIT_MS,
    );
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      log += chunk;
      const url = /listening on (http:\/\/\S+)/.exec(log)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code}) before listening: ${log.slice(-500)}`));
    });
  });
}

async function healthy(baseUrl: string): Promise<void> {
  for (;;) {
    const status = await fetch(`${baseUrl}/health`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function measure(dataDir: string): Promise<Figures> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--max-semi-space-size=8', 'build/server/main.js'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', SMTP_PORT: '0', DATA_DIR: dataDir, DATABASE_URL: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  try {
    await healthy(await listening(child));
    const readyMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const { rssMb, peakMb } = memory(child.pid as number);
    return { idleMb: rssMb, peakMb, readyMs };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

const line = (name: string, { idleMb, peakMb, readyMs }: Figures) =>
  `${name}: idle ${idleMb.toFixed(0)} MB RSS, peak ${peakMb.toFixed(0)} MB, /health 200 after ${(readyMs / 1000).toFixed(1)} s`;

const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-idle-rss-'));
try {
  const imageCached = existsSync(pgliteImagePath());
  const first = await measure(dataDir);
  const again = await measure(dataDir);
  console.log(
    line(
      `first start, new DATA_DIR (${imageCached ? 'PGlite image cached' : 'PGlite image made now'})`,
      first,
    ),
  );
  console.log(line('restart on the same data (baseline)', again));
  console.log(
    `idle first start / restart: ${(first.idleMb / again.idleMb).toFixed(2)}; before the image, a first start idled at 850-940 (STACK.md)`,
  );
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
