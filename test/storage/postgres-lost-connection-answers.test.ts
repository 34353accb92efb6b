import type postgres from 'postgres';
import * as assert from 'uvu/assert';
import {
  StorageOutcomeUnknownError,
  StorageUnavailableError,
} from '../../storage/database-error.ts';
import type { Driver, Transaction } from '../../storage/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import {
  adminConnection,
  backendState,
  waitingServiceBackends,
} from '../helpers/postgres-backends.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { eventually } from '../helpers/turns.ts';
import { TcpProxy } from './tcp-proxy.ts';

/**
 * Issue 32 §5: no write ever answers a false "nothing was written". Every write of the service
 * reaches the database through the driver (test/lint/database-doors.test.ts), so the class is
 * closed at the driver: for EVERY method of the PostgreSQL driver that can send a write (read
 * from the live driver and transaction objects, so a new method fails here until it is listed),
 * the write is held at the server (a trigger waits on an advisory lock the test holds; the test
 * waits for the backend to block, no sleeps) and its connection is then lost AFTER it was sent,
 * in the two ways a connection is lost:
 * - the statement (or COMMIT) completes at the server and its reply never arrives (a relay
 *   withholds it, then drops the connection);
 * - the backend is killed while the statement waits (pg_terminate_backend).
 * Whatever the driver answers is then checked against the table, once that backend is gone (so
 * nothing can still commit): StorageUnavailableError only when nothing was stored, success only
 * when it was, StorageOutcomeUnknownError either way; nothing else.
 *
 * Beside it, what the driver asks again (d6d4d73): a read is repeated on a fresh connection only
 * when the server never had it (a pooled connection found dead), never a read the operator
 * killed while it ran.
 */
interface Context {
  admin: postgres.Sql;
  relay: TcpProxy;
  driver: Driver;
}

/** The advisory lock the held statements wait on. */
const LOCK = 3232;

const test = postgresSuite<Context>('what the PostgreSQL driver answers when a connection is lost');

test.before(async (context) => {
  const url = await freshDatabaseUrl();
  context.admin = adminConnection(url, 'lost-connection-test');
  await context.admin.unsafe(`
    create function held() returns trigger language plpgsql as $$
    begin
      perform pg_advisory_lock_shared(${LOCK});
      perform pg_advisory_unlock_shared(${LOCK});
      return new;
    end $$;
    -- A statement's write waits at the statement; a transaction's at its COMMIT.
    create table held_rows (id text primary key);
    create trigger held before insert on held_rows for each row execute function held();
    create table held_commits (id text primary key);
    create constraint trigger held after insert on held_commits
      deferrable initially deferred for each row execute function held();`);
  const target = new URL(url);
  context.relay = await TcpProxy.start(target.hostname, Number(target.port));
  context.driver = await openPostgres(context.relay.rewrite(url), { max: 1 });
});
test.after(async ({ admin, driver, relay }) => {
  await driver.close();
  await relay.down();
  await admin.end({ timeout: 5 });
});

let ids = 0;
const insert = (table: string) => `insert into ${table} (id) values ($1)`;
const literal = (table: string, id: string) => `insert into ${table} (id) values ('${id}')`;

/** One way of sending a write, and the table whose insert holds it (at statement or COMMIT). */
interface WriteMethod {
  table: 'held_rows' | 'held_commits';
  write: (driver: Driver, id: string) => Promise<unknown>;
}

/** Inside a transaction, the write through `send`, its failure propagated as callers do. */
const inTransaction =
  (send: (tx: Transaction, id: string) => Promise<unknown>) => (driver: Driver, id: string) =>
    driver.transaction((tx) => send(tx, id));

/** Every method of the driver that can send a write, by `object.method`. */
const WRITE_METHODS: Record<string, WriteMethod> = {
  'driver.query': { table: 'held_rows', write: (d, id) => d.query(insert('held_rows'), [id]) },
  'driver.script': { table: 'held_rows', write: (d, id) => d.script(literal('held_rows', id)) },
  'driver.transaction': {
    table: 'held_commits',
    write: inTransaction((tx, id) => tx.query(insert('held_commits'), [id])),
  },
  'transaction.query': {
    table: 'held_rows',
    write: inTransaction((tx, id) => tx.query(insert('held_rows'), [id])),
  },
  'transaction.script': {
    table: 'held_rows',
    write: inTransaction((tx, id) => tx.script(literal('held_rows', id))),
  },
  'transaction.queryTable': {
    table: 'held_rows',
    write: inTransaction((tx, id) => tx.queryTable(insert('held_rows'), [id])),
  },
  'transaction.lastQuery': {
    table: 'held_rows',
    write: inTransaction((tx, id) => tx.lastQuery(insert('held_rows'), [id])),
  },
  'transaction.savepoint': {
    table: 'held_rows',
    write: inTransaction((tx, id) =>
      tx.savepoint((inner) => inner.query(insert('held_rows'), [id])),
    ),
  },
};

/** Methods that cannot send a write of the service's: why each is left out. */
const NOT_WRITES: Record<string, string> = {
  'driver.kind': 'a name',
  'driver.roundTrips': 'a count',
  'driver.ping': 'select 1',
  'driver.close': 'ends the pools',
  'driver.listen': 'LISTEN on its own connection',
  'driver.onListenResumed': 'a callback',
  'driver.loginAgentsAs': "opens the agents' pool (select 1)",
};

/** The backend of the driver's connection, once it waits on the test's lock. */
async function heldBackend(admin: postgres.Sql, answer: Promise<unknown>): Promise<number> {
  let settled = false;
  void answer.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (;;) {
    if (settled) throw new Error(`answered before it was held: ${String(await answer)}`);
    const [waiting] = await waitingServiceBackends(admin, 'advisory');
    if (waiting) return waiting.pid;
  }
}

/** The two ways of losing a connection after the write was sent (see the header). */
const FAULTS: Record<string, (context: Context, pid: number) => Promise<void>> = {
  'its reply is lost': async ({ admin, relay }, pid) => {
    relay.hold();
    await admin.unsafe(`select pg_advisory_unlock(${LOCK})`);
    await eventually('the statement completes at the server', async () =>
      ['idle', 'idle in transaction'].includes((await backendState(admin, pid)) ?? ''),
    );
    relay.cut();
  },
  'its backend is killed': async ({ admin }, pid) => {
    await admin`select pg_terminate_backend(${pid})`;
  },
};

test('the table lists every method of the driver and of a transaction', async ({ driver }) => {
  let methods: string[] = [];
  await driver.transaction(async (tx) => {
    methods = [
      ...Object.keys(driver).map((name) => `driver.${name}`),
      ...Object.keys(tx).map((name) => `transaction.${name}`),
    ];
  });
  assert.equal(methods.sort(), [...Object.keys(WRITE_METHODS), ...Object.keys(NOT_WRITES)].sort());
});

for (const [method, { table, write }] of Object.entries(WRITE_METHODS)) {
  for (const [fault, lose] of Object.entries(FAULTS)) {
    test(`${method}: a write whose ${fault.replace('its ', '')} after it was sent answers storage_unavailable only when nothing was stored`, async (context) => {
      const { admin, driver } = context;
      const id = `${method}-${++ids}`;
      await admin.unsafe(`select pg_advisory_lock(${LOCK})`);
      let answer: Promise<unknown> | null = null;
      try {
        answer = write(driver, id);
        const pid = await heldBackend(admin, answer);
        await lose(context, pid);
        const outcome = await answer.then(
          () => 'stored' as const,
          (error: unknown) => error,
        );
        // Whatever the backend did, it has done it once it is gone.
        await eventually(
          'the backend is gone',
          async () => (await backendState(admin, pid)) === null,
        );
        const [row] = await admin.unsafe<{ n: number }[]>(
          `select count(*)::int as n from ${table} where id = $1`,
          [id],
        );
        const stored = row?.n === 1;
        if (outcome === 'stored') assert.ok(stored, 'a success is stored');
        else if (outcome instanceof StorageUnavailableError) {
          assert.not.ok(stored, `"nothing was written" (${outcome.reason}), yet it was stored`);
        } else {
          assert.instance(outcome, StorageOutcomeUnknownError, String(outcome));
        }
      } finally {
        await admin.unsafe(`select pg_advisory_unlock_all()`);
        await answer?.catch(() => undefined);
      }
    });
  }
}

test("a statement a transaction's callback sends after its connection was lost is refused as storage_unavailable, and nothing is stored", async ({
  admin,
  driver,
  relay,
}) => {
  const id = `late-${++ids}`;
  let lost: Promise<unknown> = Promise.resolve();
  let late: unknown = null;
  const outcome = driver.transaction(async (tx) => {
    await tx.query('select 1');
    relay.cut();
    // The callback goes on after the driver has answered for the transaction.
    await lost;
    late = await tx.query(insert('held_rows'), [id]).catch((error: unknown) => error);
  });
  lost = outcome.catch(() => undefined);
  assert.instance(await outcome.catch((error: unknown) => error), StorageUnavailableError);
  await eventually('the callback tried its late statement', async () => late !== null);
  assert.instance(late, StorageUnavailableError);
  const [row] = await admin<{ n: number }[]>`
    select count(*)::int as n from held_rows where id = ${id}`;
  assert.is(row?.n, 0);
});

/** Reads as the service writes them: plain, and with common table expressions first. */
const READS: Record<string, string> = {
  select: `select pg_advisory_lock_shared(${LOCK}), pg_advisory_unlock_shared(${LOCK})`,
  with: `with held as (select pg_advisory_lock_shared(${LOCK}) as l)
         select l, pg_advisory_unlock_shared(${LOCK}) from held`,
};

for (const [kind, text] of Object.entries(READS)) {
  test(`a read (${kind}) the operator kills while it runs is not run again: it answers storage_unavailable`, async ({
    admin,
    driver,
  }) => {
    await admin.unsafe(`select pg_advisory_lock(${LOCK})`);
    try {
      const read = driver.query(text);
      const outcome = read.then(
        () => 'answered',
        (error: unknown) => error,
      );
      const killed = await heldBackend(admin, read);
      await admin`select pg_terminate_backend(${killed})`;
      // Run again, it would wait on the lock once more, on another backend.
      let answered: unknown = null;
      void outcome.then((value) => (answered = value));
      let again: number | null = null;
      await eventually('the read answers, or runs again', async () => {
        if (answered !== null) return true;
        const waiting = await waitingServiceBackends(admin, 'advisory');
        again = waiting.find((backend) => backend.pid !== killed)?.pid ?? null;
        return again !== null;
      });
      assert.is(again, null, 'the killed read was run again');
      assert.instance(answered, StorageUnavailableError, 'a read lost nothing written');
    } finally {
      await admin.unsafe(`select pg_advisory_unlock_all()`);
    }
  });
}

test('a read sent to a pooled connection whose backend is already gone is asked again on a fresh one, and answers', async ({
  driver,
  relay,
}) => {
  await driver.query('select 1');
  relay.sever();
  const [row] = await driver.query<{ n: number }>('select 42 as n');
  assert.is(row?.n, 42);
});

test.run();
