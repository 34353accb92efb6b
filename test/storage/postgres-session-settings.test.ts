import * as assert from 'uvu/assert';
import type { Driver } from '../../storage/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * The planner settings every connection of the service's pools starts with (storage/postgres/
 * driver.ts, PLANNER says why): JIT off, and random pages costed as the cached data they are.
 */
const test = postgresSuite<{ driver: Driver }>('the settings of the PostgreSQL pools');

test.before(async (context) => {
  context.driver = await openPostgres(await freshDatabaseUrl(), { max: 2, agentsMax: 1 });
});
test.after(async ({ driver }) => {
  await driver.close();
});

const SETTINGS = `select current_setting('jit') as jit,
  current_setting('random_page_cost') as random_page_cost`;

test('the service\u2019s pool and the agents\u2019 pool run with JIT off and random pages at 1.1', async ({
  driver,
}) => {
  const expected = { jit: 'off', random_page_cost: '1.1' };
  const [own] = await driver.query(SETTINGS);
  assert.equal(own, expected);
  const [agents] = await driver.transaction((tx) => tx.query(SETTINGS), {
    pool: 'agents',
    readOnly: true,
  });
  assert.equal(agents, expected);
});

test.run();
