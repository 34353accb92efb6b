import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { databaseJobStore, type JobStore } from '../../actors/kernel/scheduled-jobs.ts';
import { configFromEnv } from '../../server/config.ts';
import { Scheduler, type ScheduledJob, type SchedulerOptions } from '../../server/scheduler.ts';
import type { Driver } from '../../storage/driver.ts';
import { ensureScheduledJob, readScheduledJob } from '../../storage/kernel/scheduled-jobs.ts';
import { TestClock } from '../helpers/clock.ts';
import { schedulerSuite } from '../helpers/scheduler-suite.ts';
import { driverKinds, type DriverKind } from '../helpers/storage.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** Every minute, on the minute: the clocks below start on one, so runs fall a minute apart. */
const EVERY_MINUTE = '* * * * *';

/** A job that counts its runs and remembers the time each was handed. */
function countingJob(schedule = EVERY_MINUTE, fail?: Error): ScheduledJob & { runs: Date[] } {
  const runs: Date[] = [];
  return {
    name: `job-${randomUUID()}`,
    schedule,
    runs,
    run: async (now) => {
      runs.push(now);
      if (fail) throw fail;
    },
  };
}

/** Stores the job's next run as a process that ran it before would have. */
async function storeNextRun(db: Driver, name: string, at: Date): Promise<void> {
  await ensureScheduledJob(db, name, at, at);
}

function schedulerTests(kind: DriverKind): void {
  const { test, keep } = schedulerSuite(`scheduler on ${kind}`, kind);

  function scheduler(
    db: Driver,
    clock: TestClock,
    jobs: ScheduledJob[],
    log: string[] = [],
  ): Scheduler {
    const made = new Scheduler({
      jobs,
      store: databaseJobStore(db),
      clock,
      log: (line) => log.push(line),
    });
    return keep(made);
  }

  test('a new job runs once at start, and its next run is stored', async ({ driver }) => {
    const clock = new TestClock();
    const job = countingJob();
    await scheduler(driver, clock, [job]).start();
    assert.equal(job.runs, [new Date(clock.now())]);
    assert.equal(await readScheduledJob(driver, job.name), new Date(clock.now() + MINUTE));
  });

  test('a job that fell due while the service was down runs once at start', async ({ driver }) => {
    const clock = new TestClock();
    const job = countingJob();
    // Due three periods ago: a restart runs it once, not once per missed period.
    await storeNextRun(driver, job.name, new Date(clock.now() - 3 * MINUTE));
    const running = scheduler(driver, clock, [job]);
    await running.start();
    await running.idle();
    assert.is(job.runs.length, 1);
    assert.equal(await readScheduledJob(driver, job.name), new Date(clock.now() + MINUTE));
  });

  test('a job not yet due waits for its time at start', async ({ driver }) => {
    const clock = new TestClock();
    const job = countingJob();
    await storeNextRun(driver, job.name, new Date(clock.now() + 10_000));
    const running = scheduler(driver, clock, [job]);
    await running.start();
    assert.is(job.runs.length, 0);
    clock.advance(9_999);
    await running.idle();
    assert.is(job.runs.length, 0);
    clock.advance(1);
    await running.idle();
    assert.equal(job.runs, [new Date(clock.now())]);
  });

  test('a job runs on time, period after period, with the test clock', async ({ driver }) => {
    const clock = new TestClock();
    const start = clock.now();
    const job = countingJob();
    const running = scheduler(driver, clock, [job]);
    await running.start();
    for (let period = 1; period <= 3; period++) {
      clock.advance(MINUTE - 1);
      await running.idle();
      assert.is(job.runs.length, period, 'not a millisecond early');
      clock.advance(1);
      await running.idle();
      assert.is(job.runs.length, period + 1);
    }
    assert.equal(
      job.runs.map((at) => at.getTime() - start),
      [0, MINUTE, 2 * MINUTE, 3 * MINUTE],
    );
  });

  test('a run the clock passes while the last one is under way follows at once, and idle() waits for it', async ({
    driver,
  }) => {
    const clock = new TestClock();
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let firstRuns = () => {};
    const firstRunning = new Promise<void>((resolve) => (firstRuns = resolve));
    const job = countingJob();
    const run = job.run;
    job.run = async (now) => {
      await run(now);
      if (job.runs.length > 1) return;
      firstRuns();
      await held;
    };
    const running = scheduler(driver, clock, [job]);
    const started = running.start();
    await firstRunning;
    // The first run is under way; the clock passes the second's time meanwhile.
    clock.advance(MINUTE);
    release();
    await started;
    await running.idle();
    assert.is(job.runs.length, 2);
    assert.equal(await readScheduledJob(driver, job.name), new Date(clock.now() + MINUTE));
  });

  test('a restart picks up the stored schedule: nothing missed, nothing twice', async ({
    driver,
  }) => {
    const clock = new TestClock();
    const job = countingJob();
    const first = scheduler(driver, clock, [job]);
    await first.start();
    await first.stop();
    // Down for half a period: the restart runs nothing until the stored time.
    clock.advance(MINUTE / 2);
    const second = scheduler(driver, clock, [job]);
    await second.start();
    assert.is(job.runs.length, 1);
    clock.advance(MINUTE / 2);
    await second.idle();
    assert.is(job.runs.length, 2);
  });

  test('a schedule made more frequent is followed from the next start, not after the old next run', async ({
    driver,
  }) => {
    const clock = new TestClock();
    const job = countingJob(EVERY_MINUTE);
    // Stored by a process that ran it hourly.
    await storeNextRun(driver, job.name, new Date(clock.now() + 60 * MINUTE));
    const running = scheduler(driver, clock, [job]);
    await running.start();
    assert.is(job.runs.length, 0);
    assert.equal(await readScheduledJob(driver, job.name), new Date(clock.now() + MINUTE));
    clock.advance(MINUTE);
    await running.idle();
    assert.is(job.runs.length, 1);
  });

  test('two schedulers on one database run a due job once', async ({ driver, other }) => {
    const clock = new TestClock();
    const job = countingJob();
    const one = scheduler(driver, clock, [job]);
    const two = scheduler(other, clock, [job]);
    await Promise.all([one.start(), two.start()]);
    assert.is(job.runs.length, 1);
    // Both set a timer for the same moment; only one claim moves the next run.
    assert.is(clock.pending, 2);
    clock.advance(MINUTE);
    await Promise.all([one.idle(), two.idle()]);
    assert.is(job.runs.length, 2);
    clock.advance(MINUTE);
    await Promise.all([one.idle(), two.idle()]);
    assert.is(job.runs.length, 3);
  });

  test('a failing job is logged, does not stop the others, and runs again at its next time', async ({
    driver,
  }) => {
    const clock = new TestClock();
    const failing = countingJob(EVERY_MINUTE, new Error('the job broke'));
    const healthy = countingJob();
    const log: string[] = [];
    const running = scheduler(driver, clock, [failing, healthy], log);
    await running.start();
    assert.is(failing.runs.length, 1);
    assert.is(healthy.runs.length, 1);
    assert.is(log.length, 1);
    assert.match(log[0] as string, failing.name);
    assert.match(log[0] as string, 'the job broke');
    clock.advance(MINUTE);
    await running.idle();
    assert.is(failing.runs.length, 2, 'retried at its next run, not before');
    assert.is(healthy.runs.length, 2);
  });

  test('stop waits for a running job, then sets no more timers', async ({ driver }) => {
    const clock = new TestClock();
    const order: string[] = [];
    let release = () => {};
    let started = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    const job: ScheduledJob = {
      name: `slow-${randomUUID()}`,
      schedule: EVERY_MINUTE,
      run: () => {
        started();
        return new Promise<void>((resolve) => {
          release = () => {
            order.push('job finished');
            resolve();
          };
        });
      },
    };
    const made = scheduler(driver, clock, [job]);
    const starting = made.start();
    await running;
    const stopping = made.stop().then(() => order.push('stopped'));
    // A real round trip to the database: time enough for a stop that did not wait to finish.
    await driver.query('select 1');
    assert.equal(order, []);
    release();
    await Promise.all([starting, stopping]);
    assert.equal(order, ['job finished', 'stopped']);
    assert.is(clock.pending, 0);
  });

  test.run();
}

for (const kind of driverKinds()) schedulerTests(kind);
// Without DATABASE_URL this registers a skipped suite, so the runner reports the gap.
if (!driverKinds().includes('postgres')) schedulerTests('postgres');

const unit = suite('scheduler without a database');

/** A job store in memory (its leases as the database keeps them) that fails when told to. */
function memoryStore(): JobStore & { failNext: number; rows: Map<string, Date> } {
  const rows = new Map<string, Date>();
  const running = new Map<string, { fire: Date; owner: string; until: Date }>();
  const failing = () => {
    if (store.failNext > 0 && store.failNext--) throw new Error('database away');
  };
  const store = {
    rows,
    failNext: 0,
    async ensure(name: string, firstRunAt: Date, latestRunAt: Date) {
      failing();
      const due = rows.get(name);
      if (!due) rows.set(name, firstRunAt);
      else if (due > latestRunAt) rows.set(name, latestRunAt);
    },
    async claim(name: string, owner: string, fire: Date, now: Date, until: Date) {
      failing();
      const due = rows.get(name);
      const run = running.get(name);
      if (!due || (run ? run.until > now : due > fire)) return null;
      running.set(name, { fire: run?.fire ?? fire, owner, until });
      return run?.fire ?? fire;
    },
    async renew(name: string, owner: string, fire: Date, until: Date) {
      const run = running.get(name);
      if (run?.owner !== owner || run.fire.getTime() !== fire.getTime()) return false;
      run.until = until;
      return true;
    },
    async finish(name: string, owner: string, fire: Date, nextRunAt: Date) {
      const run = running.get(name);
      if (run?.owner !== owner || run.fire.getTime() !== fire.getTime()) return false;
      running.delete(name);
      rows.set(name, nextRunAt);
      return true;
    },
    async state(name: string) {
      const nextRunAt = rows.get(name);
      const run = running.get(name);
      return nextRunAt
        ? {
            nextRunAt,
            runningFire: run?.fire ?? null,
            leaseOwner: run?.owner ?? null,
            leaseUntil: run?.until ?? null,
          }
        : null;
    },
  };
  return store;
}

unit('an unreadable schedule is logged and tried again soon, not given up', async () => {
  const clock = new TestClock();
  const store = memoryStore();
  store.failNext = 1;
  const job = countingJob('0 * * * *'); // hourly: the retry comes sooner than the next run
  const log: string[] = [];
  const made = new Scheduler({ jobs: [job], store, clock, log: (line) => log.push(line) });
  await made.start();
  assert.is(job.runs.length, 0);
  assert.match(log[0] as string, 'database away');
  clock.advance(10_000);
  await made.idle();
  assert.is(job.runs.length, 1);
  await made.stop();
});

unit('a schedule further off than a timer can wait is reached in steps', async () => {
  const clock = new TestClock();
  const store = memoryStore();
  const job = countingJob('0 0 1 1 *'); // each new year: 365 days, past setTimeout's 24.8
  const made = new Scheduler({ jobs: [job], store, clock, log: () => undefined });
  await made.start();
  clock.advance(25 * DAY);
  await made.idle();
  clock.advance(339 * DAY);
  await made.idle();
  assert.is(job.runs.length, 1);
  clock.advance(DAY);
  await made.idle();
  assert.equal(job.runs, [new Date(Date.UTC(2030, 0, 1)), new Date(Date.UTC(2031, 0, 1))]);
  await made.stop();
});

unit('a job runs at the times its cron expression names, in UTC', async () => {
  const clock = new TestClock(); // Tuesday 1 January 2030, 00:00 UTC
  const store = memoryStore();
  const job = countingJob('30 2 * * mon');
  const made = new Scheduler({ jobs: [job], store, clock, log: () => undefined });
  await made.start();
  const monday = new Date(Date.UTC(2030, 0, 7, 2, 30));
  assert.equal(store.rows.get(job.name), monday, 'after the first run, the next Monday at 02:30');
  clock.advance(monday.getTime() - clock.now() - 1);
  await made.idle();
  assert.is(job.runs.length, 1);
  clock.advance(1);
  await made.idle();
  assert.equal(job.runs.at(-1), monday);
  assert.equal(store.rows.get(job.name), new Date(Date.UTC(2030, 0, 14, 2, 30)));
  await made.stop();
});

unit("JOB_SCHEDULE_<NAME> in the environment replaces the job's own schedule", async () => {
  const clock = new TestClock();
  const store = memoryStore();
  const job = { ...countingJob('0 * * * *'), name: 'invites.expire' };
  const made = new Scheduler({
    jobs: [job],
    schedules: configFromEnv({ JOB_SCHEDULE_INVITES_EXPIRE: '*/5 * * * *' }).jobSchedules,
    store,
    clock,
    log: () => undefined,
  });
  await made.start();
  assert.equal(store.rows.get(job.name), new Date(clock.now() + 5 * MINUTE));
  await made.stop();
});

unit(
  'jobs with the same name, a schedule that is no cron expression, or an unknown override, are refused',
  () => {
    const store = memoryStore();
    const clock = new TestClock();
    const job = countingJob();
    const refusal = (options: Partial<SchedulerOptions>) => {
      try {
        new Scheduler({ jobs: [job], store, clock, log: () => undefined, ...options });
      } catch (error) {
        return (error as Error).message;
      }
      assert.unreachable('the scheduler was made');
      return '';
    };
    assert.match(refusal({ jobs: [job, job] }), /Two scheduled jobs/);
    const badSchedule = refusal({ jobs: [{ ...job, schedule: '*/5 * * *' }] });
    assert.match(badSchedule, job.name);
    assert.match(badSchedule, '"*/5 * * *"');
    assert.match(badSchedule, 'expected 5 or 6 fields');
    const badMinute = refusal({ jobs: [{ ...job, schedule: '61 * * * *' }] });
    assert.match(badMinute, '61 is a invalid expression for minute');
    // node-cron accepts it, but the 1st of a month is never its second Monday.
    assert.match(refusal({ jobs: [{ ...job, schedule: '0 0 1 * 1#2' }] }), 'names no time');
    const jobName = { ...job, name: 'blocks.expire' };
    const badOverride = refusal({ jobs: [jobName], schedules: { BLOCKS_EXPIRE: 'hourly' } });
    assert.match(badOverride, 'JOB_SCHEDULE_BLOCKS_EXPIRE');
    assert.match(badOverride, '"hourly"');
    assert.match(
      refusal({ jobs: [jobName], schedules: { BLOCK_EXPIRE: '@hourly' } }),
      'JOB_SCHEDULE_BLOCK_EXPIRE names no scheduled job; the jobs are blocks.expire',
    );
  },
);

unit.run();
