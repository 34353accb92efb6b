import { CAPABILITIES } from '../../actors/capabilities.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ensureOperator } from '../../actors/agents/operator.ts';
import { Services } from '../../actors/kernel/services.ts';
import { newToken } from '../../actors/kernel/tokens.ts';
import { driverKinds, openTestDriver } from '../helpers/storage.ts';

const test = suite<{ services: Services }>('the operator agent');

test.before(async (context) => {
  context.services = new Services(
    await openTestDriver('pglite'),
    {
      baseUrl: 'http://service.test',
      operatorName: 'service',
      termsUrl: 'http://service.test/terms',
      privacyUrl: 'http://service.test/privacy',
      mailJoinAddress: 'join@service.test',
      actorCapacity: 10,
    },
    CAPABILITIES,
  );
});
test.after(async ({ services }) => {
  await services.driver.close();
});

test('an OPERATOR_TOKEN not of the service form stops start-up with a clear message', async ({
  services,
}) => {
  const error = await ensureOperator(services, 'hunter2').catch((e: Error) => e);
  assert.instance(error, Error);
  assert.match((error as Error).message, /OPERATOR_TOKEN/);
});

test('the operator is made once; later starts find it and take a new token', async ({
  services,
}) => {
  const first = await ensureOperator(services, undefined);
  const token = newToken();
  const second = await ensureOperator(services, token);
  assert.is(second, first);
  assert.is((await services.tokens.resolve(token)).agentId, first);
});

test('processes starting at once on a new database make one operator, and all find it', async () => {
  for (const kind of driverKinds()) {
    const driver = await openTestDriver(kind);
    try {
      const starts = Array.from(
        { length: 4 },
        () =>
          new Services(
            driver,
            {
              baseUrl: 'http://service.test',
              operatorName: 'service',
              termsUrl: 'http://service.test/terms',
              privacyUrl: 'http://service.test/privacy',
              mailJoinAddress: 'join@service.test',
              actorCapacity: 10,
            },
            CAPABILITIES,
          ),
      );
      const ids = await Promise.all(starts.map((services) => ensureOperator(services, undefined)));
      assert.is(new Set(ids).size, 1, kind);
      const [row] = await driver.query<{ n: number }>(
        'select count(*)::int8 as n from agents where is_operator',
      );
      assert.is(row?.n, 1);
    } finally {
      await driver.close();
    }
  }
});

test.run();
