import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** What bench/idle-rss.ts printed, and the two figures read from it when it named them. */
export interface IdleRss {
  lines: string[];
  freshMb?: number;
  restartMb?: number;
  /** bench/resident-agents.ts: RSS added by 100,000 resident agents (target: idle + this < 500). */
  residentAgentsMb?: number;
  /** bench/idle-sockets.ts: RSS added by 10,000 idle sockets (target < 100) and /health p99 meanwhile. */
  idleSocketsMb?: number;
  healthWhileConnectingP99Ms?: number;
  /** The same two figures for bare socket.io on uWS, measured in the same run. */
  bareSocketsMb?: number;
  bareHealthWhileConnectingP99Ms?: number;
}

const SCRIPT = fileURLToPath(new URL('./idle-rss.ts', import.meta.url));

export function idleRssAvailable(): boolean {
  return existsSync(SCRIPT);
}

/** The first number of MB on the first line that `start` matches (idle-rss.ts puts idle first). */
function megabytes(lines: readonly string[], start: RegExp): number | undefined {
  for (const line of lines) {
    if (!start.test(line)) continue;
    const found = /([\d.,]+)\s*MB/i.exec(line);
    if (found?.[1]) return Number(found[1].replace(/,/g, ''));
  }
  return undefined;
}

/**
 * Runs bench/idle-rss.ts in a process of its own (it starts the real service twice, and its
 * memory must not be mixed with this one's) and keeps what it prints.
 */
export async function measureIdleRss(signal: AbortSignal): Promise<IdleRss> {
  const idle = await runScript(SCRIPT, [], signal);
  const agents = await runScript(RESIDENT_AGENTS, ['--expose-gc'], signal);
  const sockets = await runScript(IDLE_SOCKETS, [], signal);
  const lines = [...idle, ...agents, ...sockets];
  const fresh = megabytes(idle, /^\s*(first|fresh)/i);
  const restart = megabytes(idle, /^\s*restart/i);
  const number = (text: string[], pattern: RegExp) => {
    for (const line of text) {
      const found = pattern.exec(line)?.[1];
      if (found) return Number(found);
    }
    return undefined;
  };
  const figures = {
    freshMb: fresh,
    restartMb: restart,
    residentAgentsMb: number(agents, /RSS \+(\d+) MB/),
    idleSocketsMb: number(sockets, /add (-?\d+) MB RSS/),
    healthWhileConnectingP99Ms: number(sockets, /\/health p99 (\d+) ms/),
    bareSocketsMb: number(sockets, /bare socket\.io on uWS (-?\d+) MB/),
    bareHealthWhileConnectingP99Ms: number(sockets, /, bare (\d+) ms/),
  };
  return {
    lines,
    ...Object.fromEntries(Object.entries(figures).filter(([, value]) => value !== undefined)),
  };
}

const RESIDENT_AGENTS = fileURLToPath(new URL('./resident-agents.ts', import.meta.url));
const IDLE_SOCKETS = fileURLToPath(new URL('./idle-sockets.ts', import.meta.url));

/** Runs one bench script in a process of its own; its lines, or one line saying why none. */
function runScript(script: string, flags: string[], signal: AbortSignal): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, '--import', 'tsx', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
      signal,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const lines = out.trimEnd().split('\n');
      // One script failing leaves the others' figures standing.
      if (code !== 0) lines.push(`${script} exited ${code}: ${(err || out).trim().slice(-300)}`);
      resolve(lines);
    });
  });
}
