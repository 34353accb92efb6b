import type { Clock } from '../actors/kernel/clock.ts';
import type { JobStore } from '../actors/kernel/scheduled-jobs.ts';

/** Work the service does on time, whether or not anyone asks (e.g. expiring invites). */
export interface ScheduledJob {
  /** Stable: the job's row in `scheduled_jobs` is found by it across restarts. */
  name: string;
  /** From one run's start to the next. */
  everyMs: number;
  /** `now` is the clock's time when the run was claimed. */
  run: (now: Date) => Promise<void>;
}

export interface SchedulerOptions {
  jobs: readonly ScheduledJob[];
  store: JobStore;
  clock: Clock;
  log: (message: string) => void;
}

// setTimeout fires at once for delays past 2^31 - 1 ms; longer waits are taken in steps.
const MAX_TIMER_MS = 2_147_483_647;
// When the schedule itself cannot be read (the database is away), look again this soon.
const RETRY_MS = 10_000;

/**
 * Runs jobs on time. Each job's next run is kept in the database, not in memory:
 * - at start, a job whose next run has passed runs at once, so a restart misses nothing (a new
 *   job is due at once);
 * - several processes on one database each set a timer for the same moment, and each then
 *   claims the run in one statement (`update ... where next_run_at <= now`): one wins, the
 *   others see the moved next run and wait for it;
 * - a claim moves the next run to `now + everyMs` before the job starts, so a failing job is
 *   logged and runs again at its next time, never in a tight loop. A run that outlasts
 *   `everyMs` may overlap the next, in another process: jobs must be idempotent.
 * Time comes from the injected Clock, so tests move it by hand.
 *
 * It lives with the doors (server/) because the clock is one more door into the service: a job
 * is to time what a handler is to a request. It reaches the database only through JobStore
 * (actors/kernel/scheduled-jobs.ts), as every door reaches storage through actors/.
 */
export class Scheduler {
  private readonly jobs: readonly ScheduledJob[];
  private readonly store: JobStore;
  private readonly clock: Clock;
  private readonly log: (message: string) => void;
  /** Jobs whose row is known to exist. */
  private readonly ensured = new Set<string>();
  private readonly timers = new Map<string, () => void>();
  /** Ticks under way (a claim, a run, a read of the next run). */
  private readonly busy = new Set<Promise<void>>();
  private started = false;
  private stopped = false;

  constructor(options: SchedulerOptions) {
    const names = new Set<string>();
    for (const job of options.jobs) {
      if (names.has(job.name)) throw new Error(`Two scheduled jobs are named ${job.name}.`);
      if (!Number.isFinite(job.everyMs) || job.everyMs <= 0) {
        throw new Error(`Scheduled job ${job.name} needs a positive everyMs.`);
      }
      names.add(job.name);
    }
    this.jobs = options.jobs;
    this.store = options.store;
    this.clock = options.clock;
    this.log = options.log;
  }

  /**
   * Schedules every job, runs at once those that are due, and resolves when those runs are
   * over and every job waits for its next time.
   */
  async start(): Promise<void> {
    if (this.started) throw new Error('The scheduler has started already.');
    this.started = true;
    await Promise.all(this.jobs.map((job) => this.track(this.tick(job))));
  }

  /** Resolves when no job is being claimed or run (at once if none is). */
  async idle(): Promise<void> {
    while (this.busy.size > 0) await Promise.all([...this.busy]);
  }

  /** Sets no more timers and waits for a running job to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    await this.idle();
  }

  /** Claims the job if it is due, runs it if claimed, then waits for its next run. */
  private async tick(job: ScheduledJob): Promise<void> {
    let wait: number;
    try {
      const now = this.clock.now();
      if (!this.ensured.has(job.name)) {
        await this.store.ensure(job.name, new Date(now));
        this.ensured.add(job.name);
      }
      if (await this.store.claim(job.name, new Date(now), new Date(now + job.everyMs))) {
        await this.run(job, now);
      }
      const next = await this.store.nextRun(job.name);
      if (next === null) this.ensured.delete(job.name);
      wait = next === null ? 0 : next.getTime() - this.clock.now();
    } catch (error) {
      wait = Math.min(job.everyMs, RETRY_MS);
      this.log(
        `scheduler: the schedule of ${job.name} could not be read (${describe(error)}); trying again in ${wait} ms`,
      );
    }
    this.arm(job, wait);
  }

  private async run(job: ScheduledJob, now: number): Promise<void> {
    try {
      await job.run(new Date(now));
    } catch (error) {
      this.log(
        `scheduler: job ${job.name} failed (${describe(error)}); it runs again at ${new Date(now + job.everyMs).toISOString()}`,
      );
    }
  }

  private arm(job: ScheduledJob, wait: number): void {
    if (this.stopped) return;
    const cancel = this.clock.setTimeout(
      () => {
        this.timers.delete(job.name);
        if (!this.stopped) void this.track(this.tick(job));
      },
      Math.min(Math.max(0, wait), MAX_TIMER_MS),
    );
    this.timers.set(job.name, cancel);
  }

  private track(tick: Promise<void>): Promise<void> {
    this.busy.add(tick);
    void tick.finally(() => this.busy.delete(tick));
    return tick;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
