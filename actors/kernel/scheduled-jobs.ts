import type { Queryable } from '../../storage/driver.ts';
import {
  ensureScheduledJob,
  finishScheduledRun,
  leaseScheduledRun,
  readScheduledJobState,
  renewScheduledRun,
  type ScheduledJobState,
} from '../../storage/kernel/scheduled-jobs.ts';

export type { ScheduledJobState };

/**
 * Where the scheduler keeps each job's next run and the lease on the run under way. The
 * scheduler (server/scheduler.ts) sees only this interface, so that the doors never touch
 * storage/ and tests can count its calls.
 */
export interface JobStore {
  /**
   * Adds the job, due at `firstRunAt`, unless it is known already; a known job due after
   * `latestRunAt` (its schedule was made more frequent) is brought forward to it.
   */
  ensure(name: string, firstRunAt: Date, latestRunAt: Date): Promise<void>;
  /**
   * Leases a run to `owner` until `leaseUntil`: the run due as of `fire`, or a run under way
   * whose lease ran out at `now`. The fire to run (the one taken over's own), for exactly
   * one of several callers; null for the others.
   */
  claim(name: string, owner: string, fire: Date, now: Date, leaseUntil: Date): Promise<Date | null>;
  /** Holds the run of `fire` until `leaseUntil`; false when `owner` no longer holds it. */
  renew(name: string, owner: string, fire: Date, leaseUntil: Date): Promise<boolean>;
  /** Ends the run: next due at `nextRunAt`, lease cleared; false when `owner` lost it. */
  finish(name: string, owner: string, fire: Date, nextRunAt: Date): Promise<boolean>;
  /** The job's next run and the run under way, or null when it is not scheduled. */
  state(name: string): Promise<ScheduledJobState | null>;
}

/**
 * The job store on the service's database: pass `services.driver` (jobs run outside any
 * request, so there is no unit of work to read through).
 */
export function databaseJobStore(db: Queryable): JobStore {
  return {
    ensure: (name, firstRunAt, latestRunAt) =>
      ensureScheduledJob(db, name, firstRunAt, latestRunAt),
    claim: (name, owner, fire, now, leaseUntil) =>
      leaseScheduledRun(db, name, owner, fire, now, leaseUntil),
    renew: (name, owner, fire, leaseUntil) => renewScheduledRun(db, name, owner, fire, leaseUntil),
    finish: (name, owner, fire, nextRunAt) => finishScheduledRun(db, name, owner, fire, nextRunAt),
    state: (name) => readScheduledJobState(db, name),
  };
}
