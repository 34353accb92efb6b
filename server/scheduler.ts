import { createTask, validateDetailed, type ScheduledTask } from 'node-cron';
import type { Clock } from '../actors/kernel/clock.ts';
import type { JobStore } from '../actors/kernel/scheduled-jobs.ts';

/** Work the service does on time, whether or not anyone asks (e.g. expiring invites). */
export interface ScheduledJob {
  /** Stable: the job's row in `scheduled_jobs` is found by it across restarts. */
  name: string;
  /**
   * When it runs: a cron expression in UTC (minute hour day-of-month month weekday, with an
   * optional leading seconds field; node-cron's syntax, `@hourly` and the like too).
   */
  schedule: string;
  /** `now` is the clock's time when the run was claimed. */
  run: (now: Date) => Promise<void>;
}

export interface SchedulerOptions {
  jobs: readonly ScheduledJob[];
  /**
   * Schedules the environment sets (Config.jobSchedules): keyed by the NAME of the variable
   * JOB_SCHEDULE_<NAME>, the job's name upper-cased with `_` for `.`; each replaces its job's
   * own schedule.
   */
  schedules?: Readonly<Record<string, string>>;
  store: JobStore;
  clock: Clock;
  log: (message: string) => void;
}

/** The NAME of the variable JOB_SCHEDULE_<NAME> that overrides a job's schedule: `invites.expire` → INVITES_EXPIRE. */
function jobScheduleKey(jobName: string): string {
  return jobName.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

// setTimeout fires at once for delays past 2^31 - 1 ms; longer waits are taken in steps.
const MAX_TIMER_MS = 2_147_483_647;
// When the schedule itself cannot be read (the database is away), look again this soon.
const RETRY_MS = 10_000;

/**
 * Runs jobs on time. Each job's next run is kept in the database, not in memory:
 * - at start, a job whose next run has passed runs at once, so a restart misses nothing (a new
 *   job is due at once); a job stored as due later than its schedule's next fire (its schedule
 *   was made more frequent) is brought forward to that fire;
 * - several processes on one database each set a timer for the same moment, and each then
 *   claims the run in one statement (`update ... where next_run_at <= now`): one wins, the
 *   others see the moved next run and wait for it;
 * - a claim moves the next run to the schedule's next fire after `now` before the job starts,
 *   so a failing job is logged and runs again at its next time, never in a tight loop. A run
 *   that outlasts its period may overlap the next, in another process: jobs must be idempotent.
 * Time comes from the injected Clock, so tests move it by hand.
 *
 * node-cron reads the schedules: it validates each cron expression and decides which times
 * match it. It does not fire the jobs: its tasks wait on the wall clock and the global
 * setTimeout, ask their run coordinator about one exact fire at a time and skip fires they
 * were not running for (a restart's missed fires) or could not get an answer about (the
 * database away). Firing, catching up and claiming are therefore this class's, on the Clock
 * and JobStore.
 *
 * It lives with the doors (server/) because the clock is one more door into the service: a job
 * is to time what a handler is to a request. It reaches the database only through JobStore
 * (actors/kernel/scheduled-jobs.ts), as every door reaches storage through actors/.
 */
export class Scheduler {
  private readonly jobs: readonly PlannedJob[];
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
      names.add(job.name);
    }
    const overrides = options.schedules ?? {};
    const keys = new Set([...names].map(jobScheduleKey));
    for (const key of Object.keys(overrides)) {
      if (!keys.has(key)) {
        throw new Error(
          `JOB_SCHEDULE_${key} names no scheduled job; the jobs are ${[...names].join(', ')}.`,
        );
      }
    }
    const expressions = options.jobs.map((job) => {
      const override = overrides[jobScheduleKey(job.name)];
      return { job, expression: override ?? job.schedule, fromEnvironment: override !== undefined };
    });
    // Every schedule is checked before node-cron is handed any, so a refusal leaves nothing behind.
    for (const { job, expression, fromEnvironment } of expressions) {
      refuseInvalid(job.name, expression, fromEnvironment);
    }
    const planned: PlannedJob[] = [];
    try {
      for (const { job, expression } of expressions) {
        const schedule = new CronSchedule(job.name, expression);
        planned.push({ job, schedule });
        // An expression node-cron accepts may still name no time (the 1st of a month that is
        // its 2nd Monday): refused now rather than failing at every tick.
        schedule.nextAfter(options.clock.now());
      }
    } catch (error) {
      for (const { schedule } of planned) schedule.dispose();
      throw error;
    }
    this.jobs = planned;
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
    for (const { schedule } of this.jobs) schedule.dispose();
  }

  /** Claims the job if it is due, runs it if claimed, then waits for its next run. */
  private async tick(planned: PlannedJob): Promise<void> {
    const { job, schedule } = planned;
    const now = this.clock.now();
    const next = schedule.nextAfter(now);
    let wait: number;
    try {
      if (!this.ensured.has(job.name)) {
        await this.store.ensure(job.name, new Date(now), new Date(next));
        this.ensured.add(job.name);
      }
      if (await this.store.claim(job.name, new Date(now), new Date(next))) {
        await this.run(job, now, next);
      }
      const stored = await this.store.nextRun(job.name);
      if (stored === null) this.ensured.delete(job.name);
      wait = stored === null ? 0 : stored.getTime() - this.clock.now();
    } catch (error) {
      wait = Math.min(next - now, RETRY_MS);
      this.log(
        `scheduler: the schedule of ${job.name} could not be read (${describe(error)}); trying again in ${wait} ms`,
      );
    }
    this.arm(planned, wait);
  }

  private async run(job: ScheduledJob, now: number, next: number): Promise<void> {
    try {
      await job.run(new Date(now));
    } catch (error) {
      this.log(
        `scheduler: job ${job.name} failed (${describe(error)}); it runs again at ${new Date(next).toISOString()}`,
      );
    }
  }

  private arm(planned: PlannedJob, wait: number): void {
    if (this.stopped) return;
    const cancel = this.clock.setTimeout(
      () => {
        this.timers.delete(planned.job.name);
        if (!this.stopped) void this.track(this.tick(planned));
      },
      Math.min(Math.max(0, wait), MAX_TIMER_MS),
    );
    this.timers.set(planned.job.name, cancel);
  }

  private track(tick: Promise<void>): Promise<void> {
    this.busy.add(tick);
    void tick.finally(() => this.busy.delete(tick));
    return tick;
  }
}

interface PlannedJob {
  job: ScheduledJob;
  schedule: CronSchedule;
}

/** Refuses, with the job and the expression named, a schedule node-cron does not accept. */
function refuseInvalid(jobName: string, expression: string, fromEnvironment: boolean): void {
  const checked = validateDetailed(expression);
  if (checked.valid) return;
  const source = fromEnvironment ? ` (set by JOB_SCHEDULE_${jobScheduleKey(jobName)})` : '';
  const reasons = checked.errors.map((error) => error.message).join('; ');
  throw new Error(
    `The schedule of job ${jobName}${source}, "${expression}", is not a cron expression: ${reasons}.`,
  );
}

const SECOND_MS = 1000;
const DAY_MS = 86_400_000;
// As far ahead as node-cron itself looks for a match.
const SEARCH_DAYS = 366 * 100;

/**
 * A cron schedule, in UTC. node-cron decides what matches: its parse expands the time fields,
 * and the match of a task (created, never started: node-cron fires on the wall clock) judges
 * days, with its L, W and # forms. node-cron offers no "next match after this time" (its
 * getNextRuns counts from the wall clock), so the walk from one time to the next is here: day
 * by day to the first that matches, then through its times in order.
 */
class CronSchedule {
  private readonly task: ScheduledTask;
  private readonly seconds: number[];
  private readonly minutes: number[];
  private readonly hours: number[];
  /** The earliest time of day the time fields allow, in ms from midnight. */
  private readonly firstTimeOfDay: number;

  constructor(jobName: string, expression: string) {
    const checked = validateDetailed(expression);
    if (!checked.valid || !checked.fields) throw new Error(`Invalid cron expression ${expression}`);
    const ascending = (values: number[]) => [...new Set(values)].sort((a, b) => a - b);
    this.seconds = ascending(checked.fields.second);
    this.minutes = ascending(checked.fields.minute);
    this.hours = ascending(checked.fields.hour);
    this.firstTimeOfDay = timeOfDay(
      Math.min(...this.hours),
      Math.min(...this.minutes),
      Math.min(...this.seconds),
    );
    this.task = createTask(expression, () => undefined, { name: jobName, timezone: 'Etc/UTC' });
  }

  /** The first fire strictly after `now` (ms since the epoch). */
  nextAfter(now: number): number {
    const firstDay = Math.floor(now / DAY_MS) * DAY_MS;
    for (let day = firstDay; day < firstDay + SEARCH_DAYS * DAY_MS; day += DAY_MS) {
      // The day's first candidate matches every time field, so the match judges the day alone.
      if (!this.task.match(new Date(day + this.firstTimeOfDay))) continue;
      const fire = this.firstTimeAfter(day, now);
      if (fire !== undefined) return fire;
    }
    throw new Error(
      `The schedule of job ${this.task.name}, "${this.task.getPattern()}", names no time within 100 years.`,
    );
  }

  /** Takes the task out of node-cron's list of tasks. */
  dispose(): void {
    void this.task.destroy();
  }

  /** The day's first time that matches the time fields and comes after `now`. */
  private firstTimeAfter(day: number, now: number): number | undefined {
    for (const hour of this.hours) {
      if (day + timeOfDay(hour + 1, 0, 0) <= now) continue;
      for (const minute of this.minutes) {
        for (const second of this.seconds) {
          const time = day + timeOfDay(hour, minute, second);
          if (time > now) return time;
        }
      }
    }
    return undefined;
  }
}

/** Milliseconds from midnight. */
function timeOfDay(hour: number, minute: number, second: number): number {
  return ((hour * 60 + minute) * 60 + second) * SECOND_MS;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
