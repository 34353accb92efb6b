import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** What bench/idle-rss.ts printed, and the two figures read from it when it named them. */
export interface IdleRss {
  lines: string[];
  freshMb?: number;
  restartMb?: number;
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
export function measureIdleRss(signal: AbortSignal): Promise<IdleRss> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
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
      if (code !== 0) {
        reject(new Error(`bench/idle-rss.ts exited ${code}: ${(err || out).trim().slice(-500)}`));
        return;
      }
      const fresh = megabytes(lines, /^\s*(first|fresh)/i);
      const restart = megabytes(lines, /^\s*restart/i);
      resolve({
        lines,
        ...(fresh === undefined ? {} : { freshMb: fresh }),
        ...(restart === undefined ? {} : { restartMb: restart }),
      });
    });
  });
}
