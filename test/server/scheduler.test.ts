import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { databaseJobStore, type JobStore } from '../../actors/kernel/scheduled-jobs.ts';
import { Scheduler, type ScheduledJob } from '../../server/scheduler.ts';
import type { Driver } from '../../storage/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { ensureScheduledJob, readScheduledJob } from '../../storage/kernel/scheduled-jobs.ts';
import { TestClock } from '../helpers/clock.ts';
import {
  driverKinds,
  freshDatabaseUrl,
  openTestDriver,
  postgresSuite,
  type DriverKind,
} from '../helpers/storage.ts';

const MINUTE = 60_000;

/** A job that counts its runs and remembers the time each was handed. */
function countingJob(everyMs = MINUTE, fail?: Error): ScheduledJob & { runs: Date[] } {
  const runs: Date[] = [];
  return {
    name: `job-${randomUUID()}`,
    everyMs,
    runs,
    run: async (now) => {
      runs.push(now);
      if (fail) throw fail;
    },
  };
}

interface Context {
  driver: Driver;
  /** A second connection to the same database: another process, as far as the claim can tell. */
  other: Driver;
}

function schedulerSuite(kind: DriverKind): void {
  const name = `scheduler on ${kind}`;
  const test = kind === 'postgres' ? postgresSuite<Context>(name) : suite<Context>(name);
  const stops: (() => Promise<void>)[] = [];

  test.before(async (context) => {
    if (kind === 'postgres') {
      const url = await freshDatabaseUrl();
      context.driver = await openPostgres(url);
      context.other = await openPostgres(url);
    } else {
      // PGlite serves one process: the second scheduler shares its driver.
      context.driver = await openTestDriver('pglite');
      context.other = context.driver;
    }
  });
  test.after.each(async () => {
    for (const stop of stops.splice(0)) await stop();
  });
  test.after(async ({ driver, other }) => {
    if (other !== driver) await other.close();
    await driver.close();
  });

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
    stops.push(() => made.stop());
    return made;
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
    await ensureScheduledJob(driver, job.name, new Date(clock.now() - 3 * MINUTE));
    const running = scheduler(driver, clock, [job]);
    await running.start();
    await running.idle();
    assert.is(job.runs.length, 1);
    assert.equal(await readScheduledJob(driver, job.name), new Date(clock.now() + MINUTE));
  });

  test('a job not yet due waits for its time at start', async ({ driver }) => {
    const clock = new TestClock();
    const job = countingJob();
    await ensureScheduledJob(driver, job.name, new Date(clock.now() + 10_000));
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
    const failing = countingJob(MINUTE, new Error('the job broke'));
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
      everyMs: MINUTE,
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

for (const kind of driverKinds()) schedulerSuite(kind);
// Without DATABASE_URL this registers a skipped suite, so the runner reports the gap.
if (!driverKinds().includes('postgres')) schedulerSuite('postgres');

const unit = suite('scheduler without a database');

/** A job store in memory that fails when told to. */
function memoryStore(): JobStore & { failNext: number; rows: Map<string, Date> } {
  const rows = new Map<string, Date>();
  const store = {
    rows,
    failNext: 0,
    async ensure(name: string, firstRunAt: Date) {
      if (store.failNext > 0 && store.failNext--) throw new Error('database away');
      if (!rows.has(name)) rows.set(name, firstRunAt);
    },
    async claim(name: string, now: Date, nextRunAt: Date) {
      if (store.failNext > 0 && store.failNext--) throw new Error('database away');
      const due = rows.get(name);
      if (!due || due > now) return false;
      rows.set(name, nextRunAt);
      return true;
    },
    async nextRun(name: string) {
      return rows.get(name) ?? null;
    },
  };
  return store;
}

unit('an unreadable schedule is logged and tried again soon, not given up', async () => {
  const clock = new TestClock();
  const store = memoryStore();
  store.failNext = 1;
  const job = countingJob(60 * MINUTE);
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
  const job = countingJob(40 * 24 * 60 * MINUTE); // 40 days: past setTimeout's 24.8
  const made = new Scheduler({ jobs: [job], store, clock, log: () => undefined });
  await made.start();
  clock.advance(25 * 24 * 60 * MINUTE);
  await made.idle();
  assert.is(job.runs.length, 1);
  clock.advance(15 * 24 * 60 * MINUTE);
  await made.idle();
  assert.is(job.runs.length, 2);
  await made.stop();
});

unit('jobs with the same name, or without a positive period, are refused', () => {
  const store = memoryStore();
  const clock = new TestClock();
  const job = countingJob();
  assert.throws(
    () => new Scheduler({ jobs: [job, job], store, clock, log: () => undefined }),
    /Two scheduled jobs/,
  );
  assert.throws(
    () => new Scheduler({ jobs: [{ ...job, everyMs: 0 }], store, clock, log: () => undefined }),
    /positive everyMs/,
  );
});

unit.run();
