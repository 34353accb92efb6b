import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DatabaseError } from '../../storage/database-error.ts';
import { openPglite, PGLITE_MEMORY, type PgliteDriver } from '../../storage/pglite/driver.ts';
import { freshPgliteDir } from '../helpers/storage.ts';

/**
 * The embedded database's memory ceiling (issue 32): PostgreSQL's WebAssembly memory may grow
 * only to `maxBytes`, and a thread left past `restartAboveBytes` is replaced between turns, which
 * gives the memory back, while the service's writes go on and none is lost.
 */
const test = suite<{ driver: PgliteDriver }>('PGlite memory ceiling');

const MIB = 2 ** 20;
/** Lower than the service's ceiling, so that the attack crosses it in a fraction of a second. */
const CEILING = { maxBytes: 256 * MIB, restartAboveBytes: 160 * MIB };

test.before(async (context) => {
  context.driver = await openPglite(await freshPgliteDir(), { memory: CEILING });
  await context.driver.script('create table notes (id text primary key)');
});
test.after(async ({ driver }) => {
  await driver.close();
});

/**
 * The attack of issue 32: `string_agg` over a cross join of parameters' `jsonb_array_elements`,
 * a 10 kB value repeated 2.25 million times (22 GB if nothing stopped it).
 */
const attack = (driver: PgliteDriver) =>
  driver.transaction(
    (tx) =>
      tx.queryTable(
        `select length(string_agg(a.value::text, '')) from jsonb_array_elements($1::jsonb) a,
           jsonb_array_elements($2::jsonb) b, jsonb_array_elements($2::jsonb) c`,
        [
          JSON.stringify(['x'.repeat(9990)]),
          JSON.stringify(Array.from({ length: 1500 }, (_, i) => i)),
        ],
      ),
    { readOnly: true, timeoutMs: 60_000, pool: 'agents' },
  );

test('the service ceiling keeps PostgreSQL within 512 MiB and gives memory back past 256 MiB', () => {
  assert.equal(PGLITE_MEMORY, { maxBytes: 512 * MIB, restartAboveBytes: 256 * MIB });
});

test("a query past the memory ceiling fails out of memory alone, the thread is replaced, and the service's writes meanwhile are all kept", async ({
  driver,
}) => {
  const before = driver.memory();
  const ids = Array.from({ length: 40 }, () => randomUUID());
  const insert = (id: string) =>
    driver.transaction((tx) => tx.query('insert into notes (id) values ($1)', [id]));
  const attacking = attack(driver).catch((error: unknown) => error);
  // Half the writes in line with the attack, half sent once it failed: those wait for the
  // thread to be replaced, and run on the new one.
  const writes = ids.slice(0, 20).map(insert);
  const failure = await attacking;
  writes.push(...ids.slice(20).map(insert));
  assert.instance(failure, DatabaseError);
  assert.is((failure as DatabaseError).sqlState, '53200', String(failure));
  await Promise.all(writes);
  const after = driver.memory();
  assert.is(after.restarts, before.restarts + 1, 'the grown thread was replaced once');
  assert.ok(after.peakWasmBytes > CEILING.restartAboveBytes, 'the attack did grow the memory');
  assert.ok(after.peakWasmBytes <= CEILING.maxBytes, `peak ${after.peakWasmBytes} past the cap`);
  assert.ok(after.wasmBytes <= CEILING.restartAboveBytes, `not replaced: ${JSON.stringify(after)}`);
  const kept = await driver.query('select id from notes where id = any($1::text[])', [ids]);
  assert.is(kept.length, ids.length, 'every write committed');
});

test('a service statement after the restart runs on the new thread, and ordinary queries never restart it', async ({
  driver,
}) => {
  const before = driver.memory().restarts;
  for (let i = 0; i < 20; i++) await driver.query('select count(*) from notes');
  assert.is(driver.memory().restarts, before);
});

test.run();
