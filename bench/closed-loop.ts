import { build } from 'hdr-histogram-js';
import { performance } from 'node:perf_hooks';

export interface LoopResult {
  /** Operations that did what they should. */
  count: number;
  /** Operations that threw, or did nothing (a read that found nothing to move past). */
  failures: number;
  elapsedMs: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * CPU of this whole process (every thread: the PGlite worker too) per operation, in µs.
   * The load is generated in-process as well, so this is the write path plus its caller.
   */
  cpuUsPerOperation: number;
}

/**
 * Runs `operation(0..n-1)` with `concurrency` in flight (a closed loop: each lane starts its next
 * operation when the last one settles), timing each from call to settlement. `operation`
 * resolves false when it did nothing it should have. Stops early, with what it has, on `signal`.
 */
export async function closedLoop(
  n: number,
  concurrency: number,
  operation: (i: number) => Promise<boolean>,
  signal: AbortSignal,
): Promise<LoopResult> {
  // Microseconds, 3 significant digits: p99 of a 1 ms command is exact to 1 µs.
  const histogram = build({ lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 });
  let next = 0;
  let failures = 0;
  let firstError: unknown = null;
  const lane = async () => {
    while (next < n && !signal.aborted) {
      const i = next++;
      const started = performance.now();
      let done = false;
      try {
        done = await operation(i);
      } catch (error) {
        firstError ??= error;
      }
      if (done) histogram.recordValue(Math.max(1, Math.round((performance.now() - started) * 1000)));
      else failures++;
    }
  };
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const count = histogram.totalCount;
  const result: LoopResult = {
    count,
    failures,
    elapsedMs,
    perSecond: count / (elapsedMs / 1000),
    p50Ms: histogram.getValueAtPercentile(50) / 1000,
    p99Ms: histogram.getValueAtPercentile(99) / 1000,
    maxMs: histogram.maxValue / 1000,
    cpuUsPerOperation: count + failures > 0 ? (cpu.user + cpu.system) / (count + failures) : 0,
  };
  histogram.destroy();
  // Every operation failing is a broken bench, not a figure: say why.
  if (count === 0 && firstError) throw firstError;
  return result;
}
