import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { createTask, validateDetailed, type Logger, type ScheduledTask } from 'node-cron';
import { realClock, type Clock } from '../actors/kernel/clock.ts';
import type { JobStore, ScheduledJobState } from '../actors/kernel/scheduled-jobs.ts';
import { CRON_TIMEZONE, CronSchedule } from './cron-schedule.ts';

/** Work the service does on time, whether or not anyone asks (e.g. expiring invites). */
export interface ScheduledJob {
  /** Stable: the job's row in `scheduled_jobs` is found by it across restarts. */
  name: string;
  /**
   * When it runs: a cron expression in UTC (minute hour day-of-month month weekday, with an
   * optional leading seconds field; node-cron's syntax, `@hourly` and the like too).
   */
  schedule: string;
  /**
   * `now` is the time the run was claimed as of: the fire's own time when node-cron fires it,
   * the clock's time when the run is a catch-up or a retry (and always on a test's clock); a
   * run taken over from a process that died is handed the time that process was handed.
   */
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
  /** The real clock (realClock) has node-cron fire the jobs; any other, timers on that clock. */
  clock: Clock;
  log: (message: string) => void;
  /**
   * The longest wait before a schedule that could not be read, or a fire that could not be
   * claimed (the database away), is tried again: 10 s unless set (tests shorten it).
   */
  retryMs?: number;
  /**
   * How long a run is held without a renewal (Config.jobLeaseSeconds, JOB_LEASE_SECONDS):
   * renewed every third of it while the job runs, and taken over by another process when it
   * runs out. 60 s unless set.
   */
  leaseMs?: number;
  /** Who holds the leases taken here: `<host>:<pid>:<random>` unless set. */
  owner?: string;
}

/** The NAME of the variable JOB_SCHEDULE_<NAME> that overrides a job's schedule: `invites.expire` → INVITES_EXPIRE. */
function jobScheduleKey(jobName: string): string {
  return jobName.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

// setTimeout fires at once for delays past 2^31 - 1 ms; longer waits are taken in steps.
const MAX_TIMER_MS = 2_147_483_647;
const RETRY_MS = 10_000;
const LEASE_MS = 60_000;

/**
 * Runs jobs on time. Each job's next run is kept in the database (`scheduled_jobs`), not in
 * memory:
 * - at start, a job whose next run has passed runs at once, so a restart misses nothing (a new
 *   job is due at once); a job stored as due later than its schedule's next fire (its schedule
 *   was made more frequent) is brought forward to that fire;
 * - every run is claimed first, in one statement: of several processes on one database each
 *   trying the same fire, exactly one wins it. The claim is a lease on the row (migration 035:
 *   the fire being run, its owner, and `lease_until`, `leaseMs` ahead): the holder renews it
 *   every third of `leaseMs` while the job runs and, when the run ends (failed or not), moves
 *   the next run to the schedule's next fire after the claimed time and clears the lease, so a
 *   failing job is logged and runs again at its next time, never in a tight loop;
 * - while a run is under way nobody else claims the job; a process that finds one under way
 *   elsewhere sets a timer for the end of its lease, and claims it then if it was not renewed
 *   (its holder died, or stalled past its lease) and runs it again as of the same fire (jobs
 *   must be safe to run twice). A run whose holder died is thus taken over `leaseMs` after its
 *   last renewal at the latest, by any process that saw it under way (every process that
 *   asked about the fire, or started since, did; one that did not finds it at its next fire).
 *   Lease times are read on each process's own clock: machines' clocks must agree (NTP), and
 *   any difference between them adds to that bound;
 * - in one process a job never overlaps itself: a fire that comes while it is claimed or
 *   running is turned away, and the due row is claimed as soon as the run ends.
 *
 * On the real clock (actors/kernel/clock.ts `realClock`, i.e. in production) node-cron fires
 * the jobs. Each job is a node-cron task named after the job, in UTC, `distributed`, whose run
 * coordinator is the claim: when a fire's timer comes due, node-cron asks `shouldRun(key)`
 * with the key `<job name>:<fire time, ISO>` before it calls the task's function; the claim is
 * made as of that fire time, the one process that wins it answers yes and runs the job (handed
 * the fire's time), the others answer no and node-cron skips the fire there. What node-cron
 * does not cover is done here, on the Clock and JobStore:
 * - catch-up: a task first fires at its schedule's next time after it starts and never looks
 *   back, so at start each job is claimed on the clock, as above (its task is started first: a
 *   fire that comes during the catch-up is turned away and claimed when the catch-up ends);
 * - a coordinator that fails: node-cron skips that fire for good (fail-closed), so the claim's
 *   error (the database away) is caught, logged, answered with no, and a timer claims the due
 *   row within min(next fire, 10 s);
 * - a fire node-cron missed (its timer more than a second late: a blocked event loop, a
 *   suspended machine): node-cron only reports it (`execution:missed`); the due row is then
 *   claimed at once;
 * - the next fire after a given time (node-cron's getNextRuns counts from the wall clock):
 *   server/cron-schedule.ts walks to it with node-cron's parsed fields and matcher;
 * - a stored next run that is no fire of the schedule (stored under another schedule), and a
 *   row that vanished, as a lost claim or a tick finds them: a timer claims them;
 * - stop: a task's stop() clears its timer but waits neither for a claim under way nor for
 *   the run that follows it; stop() here destroys the tasks and then waits for both;
 * - the job's own errors are caught and logged here: node-cron never sees one, and what it
 *   would print itself goes to the service's log.
 * The coordinator's claim is the lease above; the lease node-cron offers (`ttlMs`, kept in
 * node-cron's memory) is not used.
 * Tasks keep the process alive (node-cron's `unref` is off), as the timers they replace did.
 *
 * With any other clock (the tests, and e2e servers on a TestClock moved by hand) node-cron
 * reads no time: a timer on the injected Clock waits for each stored next run and claims it as
 * of the clock's time. node-cron then only validates and matches the expressions
 * (server/cron-schedule.ts).
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
  private readonly retryMs: number;
  private readonly leaseMs: number;
  private readonly owner: string;
  /** node-cron fires the jobs: the clock is the real one. */
  private readonly onNodeCron: boolean;
  /** Jobs whose row is known to exist. */
  private readonly ensured = new Set<string>();
  private readonly timers = new Map<string, () => void>();
  /** Work under way: a tick (claim, run, read of the next run), a fire's claim, its run. */
  private readonly underWay = new Set<Promise<unknown>>();
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
        planned.push({ job, expression, schedule, busy: false, turnedAway: false });
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
    this.retryMs = options.retryMs ?? RETRY_MS;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.onNodeCron = options.clock === realClock;
  }

  /**
   * Schedules every job, runs at once those that are due, and resolves when those runs are
   * over and every job waits for its next time.
   */
  async start(): Promise<void> {
    if (this.started) throw new Error('The scheduler has started already.');
    this.started = true;
    await Promise.all(
      this.jobs.map((planned) => {
        if (this.onNodeCron) this.startTask(planned);
        return this.track(this.tick(planned));
      }),
    );
  }

  /** Resolves when no job is being claimed or run (at once if none is). */
  async idle(): Promise<void> {
    while (this.underWay.size > 0) await Promise.all([...this.underWay]);
  }

  /** Fires no more jobs and waits for a claim or run under way to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    // destroy() stops the task (clears its timer) and takes it out of node-cron's list.
    for (const { task } of this.jobs) await task?.destroy();
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    await this.idle();
    for (const { schedule } of this.jobs) schedule.dispose();
  }

  /** Claims the job if it is due, runs it if claimed, then waits for its next run. */
  private async tick(planned: PlannedJob): Promise<void> {
    if (planned.busy) {
      planned.turnedAway = true;
      return;
    }
    planned.busy = true;
    const { job, schedule } = planned;
    const now = this.clock.now();
    const next = schedule.nextAfter(now);
    let wait: number | undefined;
    let failed = false;
    try {
      if (!this.ensured.has(job.name)) {
        await this.store.ensure(job.name, new Date(now), new Date(next));
        this.ensured.add(job.name);
      }
      const fire = await this.claim(job.name, now, now);
      if (fire !== null) await this.runLeased(job, fire, next);
      const stored = await this.store.state(job.name);
      if (stored === null) this.ensured.delete(job.name);
      wait = this.waitFor(planned, stored);
    } catch (error) {
      failed = true;
      wait = Math.min(next - now, this.retryMs);
      this.log(
        `scheduler: the schedule of ${job.name} could not be read (${describe(error)}); trying again in ${wait} ms`,
      );
    }
    // A fire turned away meanwhile is claimed at once, unless the database just failed.
    if (this.release(planned) && !failed) wait = 0;
    if (wait === undefined) return;
    // Due already (the clock passed the next run while this tick was under way): ticked now,
    // and tracked, not left to a timer of 0 ms, which idle() would not wait for, and which a
    // test's clock fires only when the test next moves it.
    if (wait <= 0 && !this.stopped) {
      this.timers.get(planned.job.name)?.();
      this.timers.delete(planned.job.name);
      void this.track(this.tick(planned));
    } else this.arm(planned, wait);
  }

  /**
   * How long the clock waits before claiming the stored next run, or the run under way when
   * its lease runs out; undefined when node-cron's fire at the next run claims it.
   */
  private waitFor(planned: PlannedJob, stored: ScheduledJobState | null): number | undefined {
    if (stored === null) return 0;
    const now = this.clock.now();
    if (stored.runningFire !== null) return (stored.leaseUntil?.getTime() ?? now) - now;
    const next = stored.nextRunAt.getTime();
    if (this.onNodeCron && next > now && planned.schedule.fires(next)) return undefined;
    return next - now;
  }

  /**
   * Leases the run due as of `asOf`, or one under way whose lease ran out: the fire to run,
   * or null when there is none for this process.
   */
  private async claim(jobName: string, asOf: number, now: number): Promise<number | null> {
    const fire = await this.store.claim(
      jobName,
      this.owner,
      new Date(asOf),
      new Date(now),
      new Date(now + this.leaseMs),
    );
    if (fire === null) return null;
    // A new run is claimed as of `asOf`; an earlier fire is a run whose lease ran out.
    if (fire.getTime() < asOf) {
      this.log(
        `scheduler: the run of ${jobName} as of ${fire.toISOString()} outlived its lease (its process died or stalled); running it again here`,
      );
    }
    return fire.getTime();
  }

  /** Runs the leased fire, renewing the lease meanwhile, then hands the job on to `next`. */
  private async runLeased(job: ScheduledJob, fire: number, next: number): Promise<void> {
    const renewal = this.renewWhileRunning(job.name, fire);
    try {
      await this.run(job, fire, next);
    } finally {
      await renewal.end();
      await this.finish(job.name, fire, next);
    }
  }

  /** Renews the lease on the run every third of it, until `end()` (which waits for one under way). */
  private renewWhileRunning(jobName: string, fire: number): { end: () => Promise<void> } {
    const every = Math.max(1, Math.floor(this.leaseMs / 3));
    let ended = false;
    let cancel = () => {};
    let renewing: Promise<void> = Promise.resolve();
    let lost = false;
    const renew = async () => {
      const until = this.clock.now() + this.leaseMs;
      try {
        const held = await this.store.renew(jobName, this.owner, new Date(fire), new Date(until));
        if (!held && !lost) {
          lost = true;
          this.log(
            `scheduler: the run of ${jobName} as of ${new Date(fire).toISOString()} lost its lease to another process, which runs it too`,
          );
        }
      } catch (error) {
        this.log(
          `scheduler: the lease on the run of ${jobName} could not be renewed (${describe(error)}); trying again in ${every} ms`,
        );
      }
    };
    const arm = () => {
      cancel = this.clock.setTimeout(() => {
        renewing = renew().finally(() => {
          if (!ended) arm();
        });
      }, every);
    };
    arm();
    return {
      end: async () => {
        ended = true;
        cancel();
        await renewing;
      },
    };
  }

  /** Ends the run in the database: the job is due next at `next`, its lease cleared. */
  private async finish(jobName: string, fire: number, next: number): Promise<void> {
    try {
      const held = await this.store.finish(jobName, this.owner, new Date(fire), new Date(next));
      if (!held) {
        this.log(
          `scheduler: the run of ${jobName} as of ${new Date(fire).toISOString()} ended after another process took it over; that process moves it on`,
        );
      }
    } catch (error) {
      this.log(
        `scheduler: the end of the run of ${jobName} could not be recorded (${describe(error)}); another process runs it again when its lease runs out`,
      );
    }
  }

  /** The job as a node-cron task whose run coordinator is the claim on `scheduled_jobs`. */
  private startTask(planned: PlannedJob): void {
    const { job } = planned;
    const task = createTask(planned.expression, () => this.runClaimed(planned), {
      name: job.name,
      timezone: CRON_TIMEZONE,
      distributed: true,
      runCoordinator: { shouldRun: (key) => this.track(this.claimFire(planned, key)) },
      logger: this.nodeCronLogger(),
    });
    // A listener also keeps node-cron from printing its own warning.
    task.on('execution:missed', ({ date }) => {
      this.log(
        `scheduler: node-cron missed the fire of ${job.name} at ${date.toISOString()} (its timer came late); claiming it now`,
      );
      this.arm(planned, 0);
    });
    planned.task = task;
    void task.start();
  }

  /**
   * node-cron's question at a fire: whether this process runs it. Yes only to the one claim
   * that moves the job's next run past the fire; a failed claim is logged, answered no, and
   * tried again on the clock.
   */
  private async claimFire(planned: PlannedJob, key: string): Promise<boolean> {
    const { job, schedule } = planned;
    if (this.stopped) return false;
    if (planned.busy) {
      planned.turnedAway = true;
      return false;
    }
    planned.busy = true;
    const fire = fireTime(job.name, key);
    try {
      if (fire === undefined)
        throw new Error(`node-cron asked about "${key}", not a fire of the job`);
      const now = this.clock.now();
      const claimed = await this.claim(job.name, fire, now);
      if (claimed === null) {
        // Another process won the fire or holds a run under way, or the row is not as
        // node-cron's fires expect (gone, or stored under another schedule): read it as a tick
        // does, which sets a timer then (for a run under way, at the end of its lease).
        const stored = await this.store.state(job.name);
        if (stored === null) this.ensured.delete(job.name);
        let wait = this.waitFor(planned, stored);
        if (this.release(planned)) wait = 0;
        if (wait !== undefined) this.arm(planned, wait);
        return false;
      }
      // node-cron calls the task's function next (runClaimed); tracked from here, so that
      // idle() and stop() wait for the run from the moment it is claimed.
      let done = () => {};
      this.track(new Promise<void>((resolve) => (done = resolve)));
      // A run taken over counts its next fire from now, as a catch-up does.
      const next = schedule.nextAfter(claimed === fire ? fire : now);
      planned.claimed = { at: claimed, next, done };
      return true;
    } catch (error) {
      this.release(planned);
      const now = this.clock.now();
      const wait = Math.min(schedule.nextAfter(now) - now, this.retryMs);
      const at = fire === undefined ? key : new Date(fire).toISOString();
      this.log(
        `scheduler: the fire of ${job.name} at ${at} could not be claimed (${describe(error)}); trying again in ${wait} ms`,
      );
      this.arm(planned, wait);
      return false;
    }
  }

  /** The task's function: runs the fire claimed for it. */
  private async runClaimed(planned: PlannedJob): Promise<void> {
    const claimed = planned.claimed;
    planned.claimed = undefined;
    // node-cron calls it only after shouldRun answered yes, so a claim is always there.
    if (!claimed) return;
    try {
      await this.runLeased(planned.job, claimed.at, claimed.next);
    } finally {
      if (this.release(planned)) this.arm(planned, 0);
      claimed.done();
    }
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

  /** Ends the job's claim or run; true when a fire was turned away meanwhile. */
  private release(planned: PlannedJob): boolean {
    const turnedAway = planned.turnedAway;
    planned.busy = false;
    planned.turnedAway = false;
    return turnedAway;
  }

  /** A tick of the job `wait` ms from now, in place of one already set. */
  private arm(planned: PlannedJob, wait: number): void {
    if (this.stopped) return;
    this.timers.get(planned.job.name)?.();
    const cancel = this.clock.setTimeout(
      () => {
        this.timers.delete(planned.job.name);
        if (!this.stopped) void this.track(this.tick(planned));
      },
      Math.min(Math.max(0, wait), MAX_TIMER_MS),
    );
    this.timers.set(planned.job.name, cancel);
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.underWay.add(work);
    void work.finally(() => this.underWay.delete(work)).catch(() => undefined);
    return work;
  }

  /** What node-cron would print itself goes to the service's log. */
  private nodeCronLogger(): Logger {
    const log = (message: string | Error, error?: Error) =>
      this.log(`scheduler: node-cron: ${describe(message)}${error ? ` (${describe(error)})` : ''}`);
    return { info: log, warn: log, error: log, debug: () => undefined };
  }
}

interface PlannedJob {
  job: ScheduledJob;
  /** The job's cron expression, after JOB_SCHEDULE_<NAME>. */
  expression: string;
  schedule: CronSchedule;
  /** Its node-cron task, on the real clock, once started. */
  task?: ScheduledTask;
  /** A claim, run or tick of the job is under way in this process. */
  busy: boolean;
  /** A fire or tick came while busy and was turned away: the row is looked at again after. */
  turnedAway: boolean;
  /** The fire node-cron's coordinator claimed, for the task's function to run. */
  claimed?: { at: number; next: number; done: () => void };
}

/** The fire's time in node-cron's coordinator key, `<task name>:<ISO time>`. */
function fireTime(jobName: string, key: string): number | undefined {
  const prefix = `${jobName}:`;
  if (!key.startsWith(prefix)) return undefined;
  const time = Date.parse(key.slice(prefix.length));
  return Number.isNaN(time) ? undefined : time;
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

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
