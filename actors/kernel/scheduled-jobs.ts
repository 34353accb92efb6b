import type { Queryable } from '../../storage/driver.ts';
import {
  claimScheduledJob,
  ensureScheduledJob,
  readScheduledJob,
} from '../../storage/kernel/scheduled-jobs.ts';

/**
 * Where the scheduler keeps each job's next run. The scheduler (server/scheduler.ts) sees only
 * this interface, so that the doors never touch storage/ and tests can count its calls.
 */
export interface JobStore {
  /**
   * Adds the job, due at `firstRunAt`, unless it is known already; a known job due after
   * `latestRunAt` (its schedule was made more frequent) is brought forward to it.
   */
  ensure(name: string, firstRunAt: Date, latestRunAt: Date): Promise<void>;
  /** True for the one caller that claims a due run; moves the next run to `nextRunAt`. */
  claim(name: string, now: Date, nextRunAt: Date): Promise<boolean>;
  /** When the job is next due, or null when it is not scheduled. */
  nextRun(name: string): Promise<Date | null>;
}

/**
 * The job store on the service's database: pass `services.driver` (jobs run outside any
 * request, so there is no unit of work to read through).
 */
export function databaseJobStore(db: Queryable): JobStore {
  return {
    ensure: (name, firstRunAt, latestRunAt) =>
      ensureScheduledJob(db, name, firstRunAt, latestRunAt),
    claim: (name, now, nextRunAt) => claimScheduledJob(db, name, now, nextRunAt),
    nextRun: (name) => readScheduledJob(db, name),
  };
}
