import type { Queryable } from '../driver.ts';

/**
 * Adds the job, due at `firstRunAt`, unless it is there already: its next run then stands,
 * unless it comes after `latestRunAt` (the job's schedule was made more frequent since the
 * next run was stored), when it is brought forward to `latestRunAt`.
 */
export async function ensureScheduledJob(
  db: Queryable,
  name: string,
  firstRunAt: Date,
  latestRunAt: Date,
): Promise<void> {
  await db.query(
    `insert into scheduled_jobs (name, next_run_at) values ($1, $2)
     on conflict (name) do update set next_run_at = $3
     where scheduled_jobs.next_run_at > $3`,
    [name, firstRunAt, latestRunAt],
  );
}

/**
 * Claims the row if its next run is due at `now`, moving the next run to `nextRunAt`. One
 * statement: of several processes claiming it, exactly one gets true. The payment watcher's
 * lease (actors/payments/chain/watcher.ts): `nextRunAt` is when its lease runs out.
 */
export async function claimScheduledJob(
  db: Queryable,
  name: string,
  now: Date,
  nextRunAt: Date,
): Promise<boolean> {
  const rows = await db.query(
    `update scheduled_jobs set next_run_at = $3
     where name = $1 and next_run_at <= $2
     returning name`,
    [name, now, nextRunAt],
  );
  return rows.length > 0;
}

/** A scheduled job's row: when it is next due, and the run under way if there is one. */
export interface ScheduledJobState {
  nextRunAt: Date;
  /** The fire the run under way was claimed as of; null when none is under way. */
  runningFire: Date | null;
  /** Who holds the run under way (a process of the service, server/scheduler.ts). */
  leaseOwner: string | null;
  /** When the run's lease runs out unless its owner renews it. */
  leaseUntil: Date | null;
}

/**
 * Leases one run of the job to `owner` until `leaseUntil`, in one statement: a run due as of
 * `fire` when none is under way, or else the run under way once its lease has run out at
 * `now` (its process died, or stalled past its lease). Of several processes asking, exactly
 * one gets the fire to run: `fire` itself, or the fire the run taken over was claimed as of.
 * Null when nothing is due or the run under way is held.
 */
export async function leaseScheduledRun(
  db: Queryable,
  name: string,
  owner: string,
  fire: Date,
  now: Date,
  leaseUntil: Date,
): Promise<Date | null> {
  const [row] = await db.query<{ running_fire: Date }>(
    `update scheduled_jobs
     set running_fire = coalesce(running_fire, $3), lease_owner = $2, lease_until = $5
     where name = $1
       and ((running_fire is null and next_run_at <= $3)
         or (running_fire is not null and lease_until <= $4))
     returning running_fire`,
    [name, owner, fire, now, leaseUntil],
  );
  return row ? row.running_fire : null;
}

/** Holds the run of `fire` until `leaseUntil`; false when `owner` no longer holds it. */
export async function renewScheduledRun(
  db: Queryable,
  name: string,
  owner: string,
  fire: Date,
  leaseUntil: Date,
): Promise<boolean> {
  const rows = await db.query(
    `update scheduled_jobs set lease_until = $4
     where name = $1 and lease_owner = $2 and running_fire = $3
     returning name`,
    [name, owner, fire, leaseUntil],
  );
  return rows.length > 0;
}

/**
 * Ends the run of `fire`: the job is next due at `nextRunAt` and no run is under way. False,
 * and nothing changed, when `owner` no longer holds the run (another process took it over,
 * and its own end moves the next run).
 */
export async function finishScheduledRun(
  db: Queryable,
  name: string,
  owner: string,
  fire: Date,
  nextRunAt: Date,
): Promise<boolean> {
  const rows = await db.query(
    `update scheduled_jobs
     set next_run_at = $4, running_fire = null, lease_owner = null, lease_until = null
     where name = $1 and lease_owner = $2 and running_fire = $3
     returning name`,
    [name, owner, fire, nextRunAt],
  );
  return rows.length > 0;
}

/** When the job is next due, or null when it is not scheduled. */
export async function readScheduledJob(db: Queryable, name: string): Promise<Date | null> {
  return (await readScheduledJobState(db, name))?.nextRunAt ?? null;
}

/** The job's row, or null when it is not scheduled. */
export async function readScheduledJobState(
  db: Queryable,
  name: string,
): Promise<ScheduledJobState | null> {
  const [row] = await db.query<{
    next_run_at: Date;
    running_fire: Date | null;
    lease_owner: string | null;
    lease_until: Date | null;
  }>(
    'select next_run_at, running_fire, lease_owner, lease_until from scheduled_jobs where name = $1',
    [name],
  );
  return row
    ? {
        nextRunAt: row.next_run_at,
        runningFire: row.running_fire,
        leaseOwner: row.lease_owner,
        leaseUntil: row.lease_until,
      }
    : null;
}
