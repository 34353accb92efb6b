import type postgres from 'postgres';
import * as assert from 'uvu/assert';
import type { Driver, Queryable, Transaction } from '../../storage/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { adminConnection, waitingServiceBackends } from '../helpers/postgres-backends.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { eventually } from '../helpers/turns.ts';

/**
 * A read that fails after some of its rows arrived leaves nothing behind on its connection:
 * the next read there answers exactly its own rows. postgres.js 3.4.9 counted the rows of a
 * connection (`result[rows++]`) and reset the count only when a statement completed, so after a
 * statement that failed mid-stream the next one resolved with holes first (`[undefined, ...,
 * row]`; porsager/postgres #1119, #1181; patched in patches/postgres+3.4.9.patch). That was the
 * "API token is not known" of a token that existed (a token look-up after a backend killed
 * mid-stream), and, in the agents' pool, one agent's failing SQL corrupting the next agent's
 * answer.
 *
 * Every way a statement fails after rows (an error in a row, its statement timeout, its backend
 * killed), on every way the driver reads rows (a statement on its own, in a transaction, the
 * transaction's last statement, agents' SQL as a table), on connections of one each (`max: 1`),
 * so the next read is on the same connection, or on the one that replaced it.
 */
interface Context {
  admin: postgres.Sql;
  driver: Driver;
}

const test = postgresSuite<Context>('rows after a read that failed mid-stream');

/** The advisory lock a statement waits on after its first rows. */
const LOCK = 3234;
/** Rows larger than PostgreSQL's 8 KiB send buffer: each is on its way before the next is made. */
const WIDE = 9000;

test.before(async (context) => {
  const url = await freshDatabaseUrl();
  context.admin = adminConnection(url, 'rows-after-failed-read');
  context.driver = await openPostgres(url, { max: 1, agentsMax: 1 });
});
test.after(async ({ admin, driver }) => {
  await driver.close();
  await admin.end({ timeout: 5 });
});

/** The read that must come back whole: three rows, 1 to 3. */
const THREE = 'select g from generate_series(1, 3) g';
const WHOLE = [{ g: 1 }, { g: 2 }, { g: 3 }];

/** Fails at its fourth row, after three were sent. */
const ERROR_IN_A_ROW = `select g, repeat('x', ${WIDE}) as pad, 1 / (4 - g) as boom
  from generate_series(1, 6) g`;
/** Runs past a 300 ms statement timeout while its rows stream. */
const PAST_ITS_TIME = `select g, repeat('x', ${WIDE}) as pad, pg_sleep(0.1)
  from generate_series(1, 50) g`;
/** Sends three rows, then waits on LOCK until it is killed. */
const HELD_AFTER_ROWS = `select g, repeat('x', ${WIDE}) as pad from generate_series(1, 3) g
  union all select 4, (select 'y' from pg_advisory_lock_shared(${LOCK}))`;

/** Each way the driver reads rows: a statement, run by `read` on a connection of its own kind. */
const READERS: Record<
  string,
  (
    driver: Driver,
    read: (db: Queryable & Partial<Transaction>) => Promise<unknown>,
  ) => Promise<unknown>
> = {
  'a statement on its own': (driver, read) => read(driver),
  'a statement in a transaction': (driver, read) => driver.transaction((tx) => read(tx)),
  "a transaction's last statement": (driver, read) =>
    driver.transaction((tx) => read({ ...tx, query: tx.lastQuery })),
  "agents' SQL, as a table": (driver, read) =>
    driver.transaction(
      (tx) =>
        read({
          ...tx,
          query: (async (text: string, params?: readonly unknown[]) =>
            (await tx.queryTable(text, params)).rows) as Queryable['query'],
        }),
      { pool: 'agents', readOnly: true },
    ),
};

/** Fails the test unless `run` rejects. */
async function fails(run: () => Promise<unknown>): Promise<void> {
  const outcome = await run().then(
    () => 'answered',
    () => 'failed',
  );
  assert.is(outcome, 'failed', 'the read fails');
}

/** What the next read answers, in the shape of `reader`. */
async function nextRead(driver: Driver, reader: string): Promise<unknown> {
  return READERS[reader]!(driver, (db) => db.query(THREE));
}

const expected = (reader: string) => (reader.startsWith("agents'") ? [[1], [2], [3]] : WHOLE);

for (const reader of Object.keys(READERS)) {
  test(`${reader}: after an error in its fourth row, the next read on the connection answers its own rows, whole`, async ({
    driver,
  }) => {
    await fails(() => READERS[reader]!(driver, (db) => db.query(ERROR_IN_A_ROW)));
    assert.equal(await nextRead(driver, reader), expected(reader));
  });

  test(`${reader}: after its statement timeout struck mid-stream, the next read answers its own rows, whole`, async ({
    driver,
  }) => {
    const pool = reader.startsWith("agents'") ? 'agents' : 'service';
    await fails(() =>
      driver.transaction(
        async (tx) =>
          pool === 'agents'
            ? tx.queryTable(PAST_ITS_TIME)
            : reader === "a transaction's last statement"
              ? tx.lastQuery(PAST_ITS_TIME)
              : tx.query(PAST_ITS_TIME),
        { timeoutMs: 300, ...(pool === 'agents' && { pool: 'agents', readOnly: true }) },
      ),
    );
    assert.equal(await nextRead(driver, reader), expected(reader));
  });
}

test('after its backend was killed with rows on their way, the next read on the new connection answers its own rows, whole', async ({
  admin,
  driver,
}) => {
  for (let round = 0; round < 3; round++) {
    await admin.unsafe('select pg_advisory_lock($1)', [LOCK]);
    const held = driver.query(HELD_AFTER_ROWS);
    held.catch(() => undefined);
    const [waiting] = await eventually('the read waits after its rows', async () => {
      const found = await waitingServiceBackends(admin, 'advisory');
      return found.length > 0 ? found : null;
    });
    await admin.unsafe('select pg_terminate_backend($1)', [waiting!.pid]);
    await fails(() => held);
    await admin.unsafe('select pg_advisory_unlock($1)', [LOCK]);
    for (let read = 0; read < 3; read++) assert.equal(await driver.query(THREE), WHOLE);
  }
});

test.run();
