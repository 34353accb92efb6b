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
 * Claims one run of the job if it is due at `now`, moving its next run to `nextRunAt`. One
 * statement: of several processes claiming the same due run, exactly one gets true.
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

/** When the job is next due, or null when it is not scheduled. */
export async function readScheduledJob(db: Queryable, name: string): Promise<Date | null> {
  const [row] = await db.query<{ next_run_at: Date }>(
    'select next_run_at from scheduled_jobs where name = $1',
    [name],
  );
  return row ? row.next_run_at : null;
}
