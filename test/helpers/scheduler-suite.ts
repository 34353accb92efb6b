import { suite, type Test } from 'uvu';
import type { Scheduler } from '../../server/scheduler.ts';
import type { Driver } from '../../storage/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { freshDatabaseUrl, openTestDriver, postgresSuite, type DriverKind } from './storage.ts';

/** What a scheduler suite's tests get: one database, seen from two processes where it can be. */
export interface SchedulerContext {
  driver: Driver;
  /** A second connection to the same database: another process, as far as the claim can tell. */
  other: Driver;
}

/**
 * A suite of scheduler tests on one kind of database: PostgreSQL gets two connections (two
 * processes, as far as the run claims can tell), PGlite, which serves one process, one shared
 * driver. `keep` hands a made scheduler over, to be stopped after its test.
 */
export function schedulerSuite(
  name: string,
  kind: DriverKind,
): { test: Test<SchedulerContext>; keep: (scheduler: Scheduler) => Scheduler } {
  const test =
    kind === 'postgres' ? postgresSuite<SchedulerContext>(name) : suite<SchedulerContext>(name);
  const running: Scheduler[] = [];

  test.before(async (context) => {
    if (kind === 'postgres') {
      const url = await freshDatabaseUrl();
      context.driver = await openPostgres(url);
      context.other = await openPostgres(url);
    } else {
      context.driver = await openTestDriver('pglite');
      context.other = context.driver;
    }
  });
  test.after.each(async () => {
    for (const scheduler of running.splice(0)) await scheduler.stop();
  });
  test.after(async ({ driver, other }) => {
    if (other !== driver) await other.close();
    await driver.close();
  });

  return {
    test,
    keep: (scheduler) => {
      running.push(scheduler);
      return scheduler;
    },
  };
}
