import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  QUERY_CANCELED,
  StorageUnavailableError,
  type DatabaseError,
} from '../../storage/database-error.ts';
import type { Queryable } from '../../storage/driver.ts';
import { openPglite, type PgliteDriver } from '../../storage/pglite/driver.ts';
import { preparePgliteDataDir } from '../../storage/pglite/image.ts';
import { freshPgliteDir } from '../helpers/storage.ts';

/** What only the embedded driver has: a worker thread that can die, and its data directory. */
const test = suite<{ driver: PgliteDriver }>('PGlite worker thread and data directory');

test.before(async (context) => {
  context.driver = await openPglite(await freshPgliteDir());
  await context.driver.script('create table notes (id text primary key)');
});
test.after(async ({ driver }) => {
  await driver.close();
});

const write = (tx: Queryable, id: string) => tx.query('insert into notes (id) values ($1)', [id]);
const count = async (driver: PgliteDriver, ...ids: string[]) =>
  (await driver.query('select id from notes where id = any($1::text[])', [ids])).length;

test('a crashed worker fails the call in flight with StorageUnavailableError, and the next call runs on a new one', async ({
  driver,
}) => {
  const committed = randomUUID();
  await driver.transaction((tx) => write(tx, committed));
  const inFlight = driver.query('select pg_sleep(10)').catch((e: unknown) => e);
  await driver.crashWorkerForTests();
  assert.instance(await inFlight, StorageUnavailableError);
  assert.is(await count(driver, committed), 1, 'what was committed is still there');
});

test('a crash under an open transaction rejects it with StorageUnavailableError and keeps none of it', async ({
  driver,
}) => {
  const uncommitted = randomUUID();
  let sleeping!: () => void;
  const asleep = new Promise<void>((resolve) => (sleeping = resolve));
  const outcome = driver
    .transaction(async (tx) => {
      await write(tx, uncommitted);
      const sleep = tx.query('select pg_sleep(10)');
      sleeping();
      // Even a callback that swallows the failure cannot make the transaction commit.
      await sleep.catch(() => undefined);
      await tx.query('select 1').catch(() => undefined);
      return 'resolved';
    })
    .catch((e: unknown) => e);
  await asleep;
  await driver.crashWorkerForTests();
  assert.instance(await outcome, StorageUnavailableError);
  assert.is(await count(driver, uncommitted), 0);
});

test('a statement timeout inside a savepoint ends the whole transaction, which rejects with 57014', async ({
  driver,
}) => {
  const [outer, after] = [randomUUID(), randomUUID()];
  const seen: unknown[] = [];
  const outcome = await driver
    .transaction(
      async (tx) => {
        await write(tx, outer);
        seen.push(await tx.savepoint((sp) => sp.query('select pg_sleep(10)')).catch((e) => e));
        seen.push(await write(tx, after).catch((e: unknown) => e));
      },
      { timeoutMs: 200 },
    )
    .catch((e: unknown) => e);
  assert.is((seen[0] as DatabaseError).sqlState, QUERY_CANCELED);
  assert.is((seen[1] as DatabaseError).sqlState, '25P02');
  assert.is((outcome as DatabaseError).sqlState, QUERY_CANCELED);
  assert.is(await count(driver, outer, after), 0);
});

test('a new data directory is made whole, beside an existing parent, in a child process', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'agent-service-prepare-'));
  try {
    const dataDir = join(parent, 'deep', 'pglite');
    await preparePgliteDataDir(dataDir);
    assert.ok(existsSync(join(dataDir, 'PG_VERSION')));
    assert.equal(readdirSync(join(parent, 'deep')), ['pglite'], 'no staging directory is left');
    const driver = await openPglite(dataDir);
    assert.equal(await driver.query('select 1 as one'), [{ one: 1 }]);
    await driver.close();
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

test('a directory that holds something other than a database is refused and left as it was', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-occupied-'));
  try {
    mkdirSync(join(dataDir, 'photos'));
    writeFileSync(join(dataDir, 'photos', 'cat.jpg'), 'meow');
    const error = await preparePgliteDataDir(dataDir).catch((e: unknown) => e);
    assert.instance(error, Error);
    assert.match((error as Error).message, 'is not a PGlite database');
    assert.equal(readdirSync(dataDir), ['photos']);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.run();
