import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DatabaseError, QUERY_CANCELED } from '../../storage/database-error.ts';
import { openPglite, type PgliteDriver } from '../../storage/pglite/driver.ts';
import { freshPgliteDir } from '../helpers/storage.ts';

/**
 * A statement past its time limit on PGlite is canceled inside PostgreSQL, as a cancel request
 * does on a server: the worker thread, its session and every caller waiting for it go on. (It
 * used to stop the thread and open the database again: ~0.7 s that every other caller waited.)
 */
const test = suite<{ driver: PgliteDriver }>('PGlite cancels a statement past its time limit');

test.before(async (context) => {
  context.driver = await openPglite(await freshPgliteDir());
});
test.after(async ({ driver }) => {
  await driver.close();
});

/** Work for the CPU alone, far past any time limit here: no sleep, no disk. */
const RUNAWAY = `select count(*) from unnest($1::int[]) a, unnest($1::int[]) b, unnest($1::int[]) c`;
const RUNAWAY_PARAMS = [Array.from({ length: 2000 }, (_, i) => i)];

/** A session setting: it outlives a canceled statement, not a new thread. */
const marker = async (driver: PgliteDriver) =>
  (
    await driver.query<{ marker: string | null }>(
      `select current_setting('test.marker', true) as marker`,
    )
  )[0]?.marker ?? null;

test('a runaway statement rejects with 57014 and the same session serves the next call', async ({
  driver,
}) => {
  await driver.query(`select set_config('test.marker', 'same session', false)`);
  const error = await driver
    .transaction((tx) => tx.query(RUNAWAY, RUNAWAY_PARAMS), { readOnly: true, timeoutMs: 200 })
    .catch((e: unknown) => e);
  assert.instance(error, DatabaseError);
  assert.is((error as DatabaseError).sqlState, QUERY_CANCELED);
  assert.match((error as DatabaseError).message, /statement timeout/);
  assert.is(await marker(driver), 'same session', 'the thread was not stopped and reopened');
});

test('a write queued behind a runaway statement is answered by the same session', async ({
  driver,
}) => {
  await driver.script('create table if not exists queued (id int)');
  await driver.query(`select set_config('test.marker', 'queued', false)`);
  const runaway = driver
    .transaction((tx) => tx.query(RUNAWAY, RUNAWAY_PARAMS), { timeoutMs: 200, pool: 'agents' })
    .catch((e: unknown) => e);
  const write = driver.transaction((tx) => tx.query('insert into queued values (1) returning id'));
  assert.equal(await write, [{ id: 1 }]);
  assert.is(((await runaway) as DatabaseError).sqlState, QUERY_CANCELED);
  assert.is(await marker(driver), 'queued', 'the write ran on the same session');
});

test('a cancel that comes after its statement ended does not touch the next statement', async ({
  driver,
}) => {
  // Each of these ends well within its limit; the timers they leave behind are cleared.
  for (let i = 0; i < 20; i++) {
    const rows = await driver
      .transaction((tx) => tx.query<{ n: number }>('select $1::int as n', [i]), {
        timeoutMs: 1,
      })
      .catch((e: unknown) => e);
    if (rows instanceof DatabaseError) assert.is(rows.sqlState, QUERY_CANCELED);
    else assert.equal(rows, [{ n: i }]);
  }
  assert.equal(await driver.query<{ n: number }>('select 7 as n'), [{ n: 7 }]);
});

test.run();
