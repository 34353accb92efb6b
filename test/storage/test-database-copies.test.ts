import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  COPY_PREFIX,
  openTestDriver,
  PGLITE_COPIES_ROOT,
  removeCopiesOfEndedRuns,
} from '../helpers/storage.ts';

/**
 * The test helpers' PGlite copies live in memory (/dev/shm) where there is one: they must not
 * pile up there, neither within a run (one per suite) nor after a killed run.
 */
const test = suite('the PGlite copies tests run on');

const copiesOfThisRun = () =>
  readdirSync(PGLITE_COPIES_ROOT).filter((name) =>
    name.startsWith(`${COPY_PREFIX}${process.pid}-`),
  );

test('a copy a test driver opened is removed as soon as the driver closes', async () => {
  // The run's template is made with its first copy, and stays: made before counting.
  await (await openTestDriver('pglite')).close();
  const before = new Set(copiesOfThisRun());
  const driver = await openTestDriver('pglite');
  const made = copiesOfThisRun().filter((name) => !before.has(name));
  assert.is(made.length, 1, `one new copy: ${made.join(', ')}`);
  await driver.close();
  assert.not.ok(copiesOfThisRun().includes(made[0]!), `${made[0]} is still there`);
});

test('copies left by a run whose process is gone are removed; those of a live one stay', () => {
  // No process has an id above the kernel's largest (pid_max is at most 2^22).
  const ended = `${COPY_PREFIX}${2 ** 22 + 1}-left`;
  const live = `${COPY_PREFIX}${process.pid}-kept`;
  mkdirSync(join(PGLITE_COPIES_ROOT, ended, 'base'), { recursive: true });
  mkdirSync(join(PGLITE_COPIES_ROOT, live), { recursive: true });
  try {
    removeCopiesOfEndedRuns();
    const names = readdirSync(PGLITE_COPIES_ROOT);
    assert.not.ok(names.includes(ended), "the ended run's copy is gone");
    assert.ok(names.includes(live), "the live run's copy stays");
  } finally {
    for (const name of [ended, live])
      rmSync(join(PGLITE_COPIES_ROOT, name), { recursive: true, force: true });
  }
});

test.run();
