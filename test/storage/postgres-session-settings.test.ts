import * as assert from 'uvu/assert';
import type { Driver } from '../../storage/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * The settings every connection of the service's pools starts with. JIT is off: compiling a
 * plan whose cost merely passes `jit_above_cost` took 15-20 ms on every store page (a branch of
 * its statement the planner costs high and seldom runs), more than the whole page otherwise.
 */
const test = postgresSuite<{ driver: Driver }>('the settings of the PostgreSQL pools');

test.before(async (context) => {
  context.driver = await openPostgres(await freshDatabaseUrl(), { max: 2, agentsMax: 1 });
});
test.after(async ({ driver }) => {
  await driver.close();
});

test('the service\u2019s pool and the agents\u2019 pool run with JIT off', async ({ driver }) => {
  const [own] = await driver.query<{ jit: string }>('show jit');
  assert.is(own?.jit, 'off');
  const [agents] = await driver.transaction((tx) => tx.query<{ jit: string }>('show jit'), {
    pool: 'agents',
    readOnly: true,
  });
  assert.is(agents?.jit, 'off');
});

test.run();
