import { AsyncResource, createHook, executionAsyncId } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { getTasks, type ScheduledTask } from 'node-cron';
import * as assert from 'uvu/assert';
import { realClock } from '../../actors/kernel/clock.ts';
import { databaseJobStore, type JobStore } from '../../actors/kernel/scheduled-jobs.ts';
import { Scheduler, type ScheduledJob } from '../../server/scheduler.ts';
import type { Driver } from '../../storage/driver.ts';
import { readScheduledJob } from '../../storage/kernel/scheduled-jobs.ts';
import { schedulerSuite } from '../helpers/scheduler-suite.ts';
import { driverKinds, type DriverKind } from '../helpers/storage.ts';

// On the real clock node-cron fires the jobs; these schedules use its seconds field to keep
// the waits short. Every wait below ends at the event it waits for, or fails at its deadline.
const EVERY_SECOND = '* * * * * *';
const EVERY_TWO_SECONDS = '*/2 * * * * *';

/** Wakes the waits when something they look at may have changed. */
class Events {
  private readonly waiters = new Set<() => void>();

  notify(): void {
    for (const check of [...this.waiters]) check();
  }

  /** Resolves once `ready()` holds, looked at after each event; fails after `withinMs`. */
  until(ready: () => boolean, what: string, withinMs: number): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const finish = () => {
        clearTimeout(deadline);
        this.waiters.delete(check);
      };
      const check = () => {
        if (!ready()) return;
        finish();
        resolve();
      };
      const deadline = setTimeout(() => {
        finish();
        reject(new Error(`${what}: not within ${withinMs} ms`));
      }, withinMs);
      this.waiters.add(check);
    });
  }
}

/** A job that records the time each run was handed. */
function recordingJob(
  events: Events,
  schedule: string,
  run: (now: Date) => Promise<void> = async () => undefined,
): ScheduledJob & { runs: Date[] } {
  const runs: Date[] = [];
  return {
    name: `job-${randomUUID()}`,
    schedule,
    runs,
    run: async (now) => {
      runs.push(now);
      events.notify();
      await run(now);
    },
  };
}

interface Claim {
  /** The time the claim was made as of (a fire's own time when node-cron asked). */
  at: number;
  won?: boolean;
  error?: string;
}

/**
 * The job store on the database, recording every claim. With `failNextFire` set, the next claim
 * made as of a whole second (node-cron's, at a fire) fails as if the database were away.
 */
function recordingStore(
  db: Driver,
  events: Events,
): JobStore & { claims: Claim[]; failNextFire: boolean } {
  const database = databaseJobStore(db);
  const store = {
    claims: [] as Claim[],
    failNextFire: false,
    ensure: database.ensure,
    renew: database.renew,
    finish: database.finish,
    state: database.state,
    async claim(name: string, owner: string, fire: Date, now: Date, leaseUntil: Date) {
      const claim: Claim = { at: fire.getTime() };
      store.claims.push(claim);
      try {
        if (store.failNextFire && claim.at % 1000 === 0) {
          store.failNextFire = false;
          throw new Error('database away');
        }
        const claimed = await database.claim(name, owner, fire, now, leaseUntil);
        claim.won = claimed !== null;
        return claimed;
      } catch (error) {
        claim.error = (error as Error).message;
        throw error;
      } finally {
        events.notify();
      }
    },
  };
  return store;
}

/** The node-cron task that fires the job (the scheduler's matcher never starts). */
function firingTask(jobName: string): ScheduledTask | undefined {
  return [...getTasks().values()].find(
    (task) => task.name === jobName && task.getStatus() !== 'stopped',
  );
}

/**
 * Timers of node-cron and of the real clock set, from now on, by what `within` starts and by
 * everything that descends from it (node-cron re-arms each tick from the last, the scheduler
 * sets lease timers from a fire), until they fire or are cleared. Descent tells ours apart:
 * other servers of this test process run schedulers on node-cron too, and their ticks may fall
 * in this window. node:async_hooks reports a cleared timer's end a moment later, so `settled`
 * waits for those reports first.
 */
function watchTimers(): {
  live: Set<number>;
  within: <T>(start: () => T) => T;
  settled: () => Promise<void>;
  close: () => void;
} {
  const live = new Set<number>();
  const ours = new Set<number>();
  const hook = createHook({
    init(asyncId, type, triggerAsyncId) {
      if (!ours.has(triggerAsyncId) && !ours.has(executionAsyncId())) return;
      ours.add(asyncId);
      if (type !== 'Timeout') return;
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 30;
      const frames = (new Error().stack ?? '').split('\n');
      Error.stackTraceLimit = limit;
      const caller =
        frames[frames.findIndex((frame) => /at setTimeout \(node:timers/.test(frame)) + 1];
      // node-cron's own timers and the scheduler's on the real clock; a database driver's
      // timers on the way (a pooled connection's idle time) are the driver's to keep.
      if (
        caller &&
        /node_modules[/\\]node-cron[/\\]|actors[/\\]kernel[/\\]clock\.ts/.test(caller)
      ) {
        live.add(asyncId);
      }
    },
    destroy(asyncId) {
      live.delete(asyncId);
    },
  }).enable();
  return {
    live,
    within: (start) => {
      const root = new AsyncResource('scheduler under test');
      ours.add(root.asyncId());
      return root.runInAsyncScope(start);
    },
    // Node queues destroy hooks and runs them from a native immediate of its own, which may come
    // after ours under load: give the queue a few turns of the loop (not time) to drain.
    settled: async () => {
      for (let turn = 0; turn < 20 && live.size > 0; turn++) {
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    },
    close: () => void hook.disable(),
  };
}

function nodeCronSuite(kind: DriverKind): void {
  const { test, keep } = schedulerSuite(`scheduler on node-cron on ${kind}`, kind);

  function scheduler(
    store: JobStore,
    jobs: ScheduledJob[],
    options: { log?: string[]; events?: Events; retryMs?: number } = {},
  ): Scheduler {
    const made = new Scheduler({
      jobs,
      store,
      clock: realClock,
      log: (line) => {
        options.log?.push(line);
        options.events?.notify();
      },
      retryMs: options.retryMs,
    });
    return keep(made);
  }

  test('a job fires through node-cron within a couple of seconds, as of the fire’s own time', async ({
    driver,
  }) => {
    const events = new Events();
    const job = recordingJob(events, EVERY_SECOND);
    const running = scheduler(databaseJobStore(driver), [job]);
    await running.start();
    assert.is(job.runs.length, 1, 'a new job is due at once: the catch-up runs it');
    const task = firingTask(job.name);
    assert.ok(task, 'the job is a started node-cron task');
    const executions: Date[] = [];
    task.on('execution:finished', ({ date }) => {
      executions.push(date);
      events.notify();
    });
    await events.until(() => executions.length > 0, 'a fire run by node-cron', 3000);
    const fire = executions[0]!.getTime();
    assert.is(fire % 1000, 0, 'a fire of the schedule');
    assert.equal(
      job.runs.filter((run) => run.getTime() === fire).length,
      1,
      'the job ran once as of the fire’s time',
    );
  });

  test('two schedulers on one database run each fire exactly once between them', async ({
    driver,
    other,
  }) => {
    const events = new Events();
    const job = recordingJob(events, EVERY_SECOND);
    const oneStore = recordingStore(driver, events);
    const twoStore = recordingStore(other, events);
    const one = scheduler(oneStore, [job]);
    const two = scheduler(twoStore, [job]);
    await Promise.all([one.start(), two.start()]);
    // A fire is a time node-cron asked both schedulers about (a whole second, its key's time).
    const askedOf = (store: typeof oneStore) =>
      new Set(store.claims.filter((claim) => claim.at % 1000 === 0).map((claim) => claim.at));
    const fires = () => {
      const two = askedOf(twoStore);
      return [...askedOf(oneStore)].filter((at) => two.has(at));
    };
    const ran = (at: number) => job.runs.filter((run) => run.getTime() === at).length;
    await events.until(
      () => fires().filter((at) => ran(at) > 0).length >= 3,
      'three fires asked of both and run',
      6000,
    );
    await Promise.all([one.stop(), two.stop()]);
    for (const at of fires()) {
      const claims = [...oneStore.claims, ...twoStore.claims].filter((claim) => claim.at === at);
      assert.is(
        claims.filter((claim) => claim.won).length,
        1,
        `one claim won ${new Date(at).toISOString()}`,
      );
      assert.is(ran(at), 1, `the fire of ${new Date(at).toISOString()} ran once`);
    }
    const times = job.runs.map((run) => run.getTime());
    assert.is(new Set(times).size, times.length, 'no run twice');
  });

  test('a coordinator failure is logged, and the retry claims the due fire before the next one', async ({
    driver,
  }) => {
    const events = new Events();
    const job = recordingJob(events, EVERY_TWO_SECONDS);
    const store = recordingStore(driver, events);
    const log: string[] = [];
    const running = scheduler(store, [job], { log, events, retryMs: 100 });
    await running.start();
    assert.is(job.runs.length, 1);
    store.failNextFire = true;
    await events.until(
      () => store.claims.some((claim) => claim.error),
      'a failed claim of a fire',
      3000,
    );
    const failed = store.claims.find((claim) => claim.error)!;
    await events.until(
      () => job.runs.some((run) => run.getTime() > failed.at),
      'the failed fire, run',
      3000,
    );
    const line = log.find((entry) => entry.includes('could not be claimed'));
    assert.ok(line, 'the failure is logged');
    assert.match(line, job.name);
    assert.match(line, new Date(failed.at).toISOString());
    assert.match(line, 'database away');
    const retried = job.runs.find((run) => run.getTime() > failed.at)!.getTime();
    assert.ok(
      retried > failed.at && retried < failed.at + 2000,
      `run by the retry ${retried - failed.at} ms after the failed fire, before the next fire`,
    );
  });

  test('a job whose row vanished is scheduled again at its next fire and runs', async ({
    driver,
  }) => {
    const events = new Events();
    const job = recordingJob(events, EVERY_SECOND);
    const running = scheduler(databaseJobStore(driver), [job]);
    await running.start();
    await driver.query('delete from scheduled_jobs where name = $1', [job.name]);
    const gone = Date.now();
    // The next fire's claim finds no row; the row is made again, due at once, and claimed.
    await events.until(
      () => job.runs.some((run) => run.getTime() > gone),
      'a run after the row vanished',
      3000,
    );
    await running.idle();
    assert.ok(await readScheduledJob(driver, job.name), 'the row is back');
  });

  test('stop waits for a fire being run, then leaves no task and no timer behind', async ({
    driver,
  }) => {
    const events = new Events();
    const order: string[] = [];
    let release: (() => void) | undefined;
    const job = recordingJob(events, EVERY_SECOND, (now) =>
      // The catch-up at start returns at once; the first fire waits to be released.
      now.getTime() % 1000 === 0 && !release
        ? new Promise<void>((resolve) => {
            release = () => {
              order.push('job finished');
              resolve();
            };
            events.notify();
          })
        : Promise.resolve(),
    );
    const timers = watchTimers();
    try {
      const running = scheduler(databaseJobStore(driver), [job]);
      await timers.within(() => running.start());
      const task = firingTask(job.name);
      assert.ok(task);
      assert.ok(timers.live.size > 0, 'the watch sees node-cron’s timer');
      await events.until(() => release !== undefined, 'a fire being run', 3000);
      const stopping = timers.within(() => running.stop()).then(() => order.push('stopped'));
      // A real round trip to the database: time enough for a stop that did not wait to finish.
      await driver.query('select 1');
      assert.equal(order, []);
      release!();
      await stopping;
      assert.equal(order, ['job finished', 'stopped']);
      assert.is(task.getStatus(), 'destroyed');
      assert.not.ok(
        [...getTasks().values()].some((each) => each.name === job.name),
        'no task of the job is left in node-cron’s list',
      );
      await timers.settled();
      assert.is(timers.live.size, 0, 'no timer of node-cron or the scheduler is left');
    } finally {
      timers.close();
    }
  });

  test.run();
}

for (const kind of driverKinds()) nodeCronSuite(kind);
// Without DATABASE_URL this registers a skipped suite, so the runner reports the gap.
if (!driverKinds().includes('postgres')) nodeCronSuite('postgres');
