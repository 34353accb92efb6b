import { build, type Histogram } from 'hdr-histogram-js';
import { performance } from 'node:perf_hooks';

export interface LoopResult {
  /** Operations that did what they should. */
  count: number;
  /** Operations that threw, or did nothing (a read that found nothing to move past). */
  failures: number;
  /** Time spent in the measured runs (summed over rounds). */
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
  /** Why the first failed operation failed, when one threw. */
  firstError?: string;
}

/**
 * Closed-loop runs of one operation, possibly in several rounds (interleaved with other
 * measurements, so that a machine whose load changes over time weighs on all of them alike),
 * added up into one latency histogram, one count and one CPU total.
 */
export class ClosedLoop {
  // Microseconds, 3 significant digits: p99 of a 1 ms command is exact to 1 µs.
  private readonly histogram: Histogram = build({
    lowestDiscernibleValue: 1,
    numberOfSignificantValueDigits: 3,
  });
  private failures = 0;
  private elapsedMs = 0;
  private cpuUs = 0;
  private firstError: unknown = null;

  /**
   * Runs `operation(0..n-1)` with `concurrency` in flight (each lane starts its next operation
   * when its last one settles), timing each from call to settlement. `operation` resolves false
   * when it did nothing it should have. Stops early, with what it has, on `signal`.
   */
  async run(
    n: number,
    concurrency: number,
    operation: (i: number) => Promise<boolean>,
    signal: AbortSignal,
  ): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < n && !signal.aborted) {
        const i = next++;
        const started = performance.now();
        let done = false;
        try {
          done = await operation(i);
        } catch (error) {
          this.firstError ??= error;
        }
        const micros = Math.max(1, Math.round((performance.now() - started) * 1000));
        if (done) this.histogram.recordValue(micros);
        else this.failures++;
      }
    };
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
    this.elapsedMs += performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    this.cpuUs += cpu.user + cpu.system;
    // Every operation failing is a broken bench, not a figure: say why.
    if (this.histogram.totalCount === 0 && this.firstError) throw this.firstError;
  }

  /** The totals so far; frees the histogram, so call it once, last. */
  finish(): LoopResult {
    const count = this.histogram.totalCount;
    const attempts = count + this.failures;
    const result: LoopResult = {
      count,
      failures: this.failures,
      elapsedMs: this.elapsedMs,
      perSecond: this.elapsedMs > 0 ? count / (this.elapsedMs / 1000) : 0,
      p50Ms: this.histogram.getValueAtPercentile(50) / 1000,
      p99Ms: this.histogram.getValueAtPercentile(99) / 1000,
      maxMs: this.histogram.maxValue / 1000,
      cpuUsPerOperation: attempts > 0 ? this.cpuUs / attempts : 0,
    };
    if (this.firstError) {
      const error = this.firstError;
      result.firstError = error instanceof Error ? error.message : String(error);
    }
    this.histogram.destroy();
    return result;
  }
}
