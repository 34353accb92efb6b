import { execFileSync, spawn } from 'node:child_process';

/**
 * wrk (Debian's package), when installed, is the preferred load generator: written in C, it
 * drives raw uWS far harder than autocannon can, so the baseline is not capped by the
 * generator. Without it the bench falls back to autocannon.
 */
export function wrkAvailable(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    // wrk --version exits 1 after printing its version.
    return (error as { status?: number }).status === 1;
  }
}

export interface WrkResult {
  requestsPerSecond: number;
  total: number;
  failures: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

function milliseconds(text: string): number {
  const found = /([\d.]+)(us|ms|s)/.exec(text);
  if (!found) return NaN;
  const value = Number(found[1]);
  return found[2] === 'us' ? value / 1000 : found[2] === 's' ? value * 1000 : value;
}

export function runWrk(
  options: { url: string; headers?: Record<string, string>; connections: number; seconds: number },
  signal: AbortSignal,
): Promise<WrkResult> {
  const args = ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--latency'];
  for (const [name, value] of Object.entries(options.headers ?? {}))
    args.push('-H', `${name}: ${value}`);
  args.push(options.url);
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'], signal });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const rate = /Requests\/sec:\s+([\d.]+)/.exec(out);
      const total = /(\d+) requests in/.exec(out);
      if (code !== 0 || !rate || !total) return reject(new Error(`wrk exited ${code}: ${out}`));
      const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
      const socketErrors =
        /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const errors = socketErrors
        ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0)
        : 0;
      resolve({
        requestsPerSecond: Number(rate[1]),
        total: Number(total[1]),
        failures: non2xx + errors,
        latencyP50Ms: milliseconds(/\s50%\s+(\S+)/.exec(out)?.[1] ?? ''),
        latencyP99Ms: milliseconds(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
      });
    });
  });
}
