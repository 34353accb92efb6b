import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { runWrk, wrkAvailable } from './wrk.ts';

/**
 * autocannon runs in a child process: on two cores, the server under test keeps its own core
 * instead of sharing an event loop with the load generator.
 */
const autocannonBin = createRequire(import.meta.url).resolve('autocannon');

export interface LoadOptions {
  url: string;
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  total: number;
  /** Answers that were not 2xx, plus socket errors and timeouts: a fast 401 is not a result. */
  failures: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /**
   * CPU this process (server, its PGlite worker) used during the measured run, in % of one
   * core: near 100 means the server was the limit, well under means the load generator was.
   */
  serverCpuPercent: number;
  /**
   * Requests answered per second of the server's CPU: `total` over the CPU time this process
   * (every thread; the load generator is a child process and not counted) used in the same
   * window. What each request costs, whatever the generator could drive.
   */
  requestsPerCpuSecond: number;
}

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

function runOnce(options: LoadOptions, signal: AbortSignal): Promise<AutocannonJson> {
  const args = [autocannonBin, '--json', '--no-progress', '-c', String(options.connections)];
  args.push('-p', '1', '-d', String(options.seconds));
  for (const [name, value] of Object.entries(options.headers ?? {}))
    args.push('-H', `${name}=${value}`);
  args.push(options.url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], signal });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const json = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !json.startsWith('{')) {
        return reject(new Error(`autocannon exited ${code}: ${err.trim() || out.trim()}`));
      }
      resolve(JSON.parse(json) as AutocannonJson);
    });
  });
}

/** The load generator of this run: wrk when installed, else autocannon. */
export const LOAD_GENERATOR: 'wrk' | 'autocannon' = wrkAvailable() ? 'wrk' : 'autocannon';

async function runAutocannon(options: LoadOptions, signal: AbortSignal) {
  const result = await runOnce(options, signal);
  return {
    requestsPerSecond: result.requests.average,
    total: result.requests.total,
    failures: result.non2xx + result.errors + result.timeouts,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
  };
}

/** A one-second warm-up (JIT, caches, keep-alive sockets), then the measured run. */
export async function measureLoad(options: LoadOptions, signal: AbortSignal): Promise<LoadResult> {
  const run = LOAD_GENERATOR === 'wrk' ? runWrk : runAutocannon;
  await run({ ...options, seconds: 1 }, signal);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const result = await run(options, signal);
  const cpu = process.cpuUsage(cpuBefore);
  const elapsedMs = performance.now() - started;
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    ...result,
    serverCpuPercent: ((cpuSeconds * 1000) / elapsedMs) * 100,
    // Both counted over the same window (the generator's start to its exit): the requests the
    // generator saw answered, and all the CPU the server spent meanwhile, idle gaps included.
    requestsPerCpuSecond: cpuSeconds > 0 ? result.total / cpuSeconds : 0,
  };
}
