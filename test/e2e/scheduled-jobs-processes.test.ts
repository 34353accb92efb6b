import postgres from 'postgres';
import * as assert from 'uvu/assert';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Scheduled jobs across real service processes on one PostgreSQL (issue 24, item 3), on the
 * production path: the real clock, node-cron firing each job and the lease in `scheduled_jobs`
 * coordinating the processes.
 *
 * The job held back is a real one, `knocks.expire`, made to fire every second with
 * JOB_SCHEDULE_KNOCKS_EXPIRE. Its run starts with a read of the `knocks` table; the test holds
 * an ACCESS EXCLUSIVE lock on that table in an open transaction, so the run that claims a fire
 * waits inside its job, as a long job would, until the test commits. Each run waiting there is
 * one backend waiting for that lock: the count of runs under way, as PostgreSQL sees them.
 * The row of `scheduled_jobs` tells which process holds the run (its owner names the pid).
 *
 * PostgreSQL has no event for "a query now waits for a lock" or "a row changed", so the waits
 * below look at the database every 50 ms until what they wait for holds, or fail at a deadline.
 */
const test = postgresSuite('scheduled jobs: several processes, one PostgreSQL');

const JOB = 'knocks.expire';
const LEASE_SECONDS = 2;
const LEASE_MS = LEASE_SECONDS * 1000;
/** What a takeover may take beyond the lease on this shared 2-core machine: a timer, a claim. */
const SLACK_MS = 1000;

interface JobRow {
  running_fire: Date | null;
  lease_owner: string | null;
  lease_until: Date | null;
  next_run_at: Date;
}

async function jobRow(sql: postgres.Sql): Promise<JobRow> {
  const [row] = await sql<JobRow[]>`
    select running_fire, lease_owner, lease_until, next_run_at
    from scheduled_jobs where name = ${JOB}`;
  return row as JobRow;
}

/** Runs of the job under way as PostgreSQL sees them: queries waiting for the test's lock. */
async function runsWaiting(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'
      and query like '%from knocks where status%'`;
  return row?.count ?? 0;
}

/** Looks every 50 ms until `check` gives a value, or fails after `withinMs`. */
async function until<T>(
  check: () => Promise<T | undefined>,
  what: string,
  withinMs: number,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The `knocks` table locked in an open transaction, until `release()`. */
function lockKnocks(sql: postgres.Sql): { locked: Promise<void>; release: () => Promise<void> } {
  let release = () => {};
  let locked = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const lockTaken = new Promise<void>((resolve) => (locked = resolve));
  const transaction = sql.begin(async (tx) => {
    await tx`lock table knocks in access exclusive mode`;
    locked();
    await held;
  });
  return {
    locked: Promise.race([lockTaken, transaction.then(() => undefined)]),
    release: async () => {
      release();
      await transaction;
    },
  };
}

/** Two service processes on a fresh database, the job firing every second, its lease short. */
async function twoProcesses(): Promise<{
  databaseUrl: string;
  processes: ServiceProcess[];
}> {
  const databaseUrl = await freshDatabaseUrl();
  const env = {
    DATABASE_URL: databaseUrl,
    JOB_LEASE_SECONDS: String(LEASE_SECONDS),
    JOB_SCHEDULE_KNOCKS_EXPIRE: '* * * * * *',
  };
  const processes: ServiceProcess[] = [];
  try {
    // One after the other: the first makes the database's blob store identity.
    processes.push(await startServiceProcess(env));
    processes.push(await startServiceProcess(env));
  } catch (error) {
    for (const started of processes) await started.stop();
    throw error;
  }
  return { databaseUrl, processes };
}

/** The process whose pid the lease's owner (`<host>:<pid>:<random>`) names. */
function holderOf(processes: ServiceProcess[], owner: string): ServiceProcess | undefined {
  return processes.find((each) => owner.split(':').at(-2) === String(each.pid));
}

test('a process killed with -9 during a run: the other runs that same fire within the lease', async () => {
  const { databaseUrl, processes } = await twoProcesses();
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => undefined });
  const lock = lockKnocks(sql);
  try {
    await lock.locked;
    // The next fire's run claims the job and waits for the lock inside the job.
    const held = await until(
      async () => {
        const row = await jobRow(sql);
        return row.running_fire && row.lease_owner && (await runsWaiting(sql)) === 1
          ? row
          : undefined;
      },
      'a run of the job under way, waiting for the lock',
      5000,
    );
    const holder = holderOf(processes, held.lease_owner!);
    const survivor = processes.find((each) => each !== holder);
    assert.ok(holder && survivor, `the owner ${held.lease_owner} is one of the two processes`);

    // Killed at once, mid-run, with its lease live: it renews nothing more and ends nothing.
    holder.kill('SIGKILL');
    await holder.exited;
    const killedAt = Date.now();
    const atKill = await jobRow(sql);
    assert.ok(atKill.lease_until!.getTime() > killedAt - 100, 'the lease was live at the kill');

    const taken = await until(
      async () => {
        const row = await jobRow(sql);
        return row.lease_owner && holderOf([survivor], row.lease_owner) ? row : undefined;
      },
      'the run taken over by the survivor',
      LEASE_MS + SLACK_MS + 2000,
    );
    const takenAfter = Date.now() - killedAt;
    assert.ok(
      takenAfter <= LEASE_MS + SLACK_MS,
      `taken over ${takenAfter} ms after the kill, within the lease of ${LEASE_MS} ms`,
    );
    assert.equal(taken.running_fire, held.running_fire, 'the same fire, run again');
    // The dead process's query still waits (PostgreSQL learns of the dead client only when
    // it answers); the survivor's run of the fire waits beside it.
    await until(
      async () => ((await runsWaiting(sql)) === 2 ? true : undefined),
      'the survivor’s run waiting for the lock',
      3000,
    );

    await lock.release();
    const done = await until(
      async () => {
        const row = await jobRow(sql);
        return row.running_fire === null ? row : undefined;
      },
      'the run taken over, finished',
      5000,
    );
    assert.is(done.lease_owner, null);
    assert.ok(done.next_run_at.getTime() > held.running_fire!.getTime(), 'the next run moved on');
    assert.match(survivor.stderr(), `the run of ${JOB} as of ${held.running_fire!.toISOString()}`);
    assert.match(survivor.stderr(), 'outlived its lease');
  } finally {
    await lock.release().catch(() => undefined);
    await sql.end();
    for (const each of processes) await each.stop();
  }
});

test('two live processes never run one fire twice: a run outlasting its lease is renewed, every later fire waits', async () => {
  const { databaseUrl, processes } = await twoProcesses();
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => undefined });
  const lock = lockKnocks(sql);
  try {
    await lock.locked;
    const held = await until(
      async () => {
        const row = await jobRow(sql);
        return row.running_fire && row.lease_owner && (await runsWaiting(sql)) === 1
          ? row
          : undefined;
      },
      'a run of the job under way, waiting for the lock',
      5000,
    );
    const fire = held.running_fire!.getTime();
    // Three leases long, a fire every second: every look finds the one run, still its owner's.
    const samples: number[] = [];
    await until(
      async () => {
        const row = await jobRow(sql);
        assert.equal(row.running_fire, held.running_fire, 'the same run throughout');
        assert.is(row.lease_owner, held.lease_owner, 'held by its owner throughout');
        samples.push(await runsWaiting(sql));
        return row.lease_until!.getTime() >= fire + 3 * LEASE_MS ? true : undefined;
      },
      'the lease renewed past three leases',
      3 * LEASE_MS + 5000,
    );
    assert.ok(samples.length > 10, `${samples.length} looks`);
    assert.ok(
      samples.every((count) => count === 1),
      `one run waiting at every look: ${samples.join(' ')}`,
    );

    await lock.release();
    await until(
      async () => ((await jobRow(sql)).running_fire === null ? true : undefined),
      'the run finished',
      5000,
    );
    for (const each of processes) {
      assert.not.match(each.stderr(), 'outlived its lease', 'nothing was taken over');
      assert.not.match(each.stderr(), 'lost its lease');
    }
  } finally {
    await lock.release().catch(() => undefined);
    await sql.end();
    for (const each of processes) await each.stop();
  }
});

test.run();
