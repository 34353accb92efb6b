import { CAPABILITIES } from '../../actors/capabilities.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ensureOperator } from '../../actors/agents/operator.ts';
import { Services } from '../../actors/kernel/services.ts';
import { openTestDriver } from '../helpers/storage.ts';

const test = suite("the operator's configured name");

async function startWithName(operatorName: string): Promise<unknown> {
  const driver = await openTestDriver('pglite');
  try {
    const services = new Services(
      driver,
      {
        baseUrl: 'http://service.test',
        operatorName,
        termsUrl: 'http://service.test/terms',
        privacyUrl: 'http://service.test/privacy',
        mailJoinAddress: 'join@service.test',
        actorCapacity: 10,
      },
      CAPABILITIES,
    );
    return await ensureOperator(services, undefined).catch((e: unknown) => e);
  } finally {
    await driver.close();
  }
}

test('an OPERATOR_NAME that no agent could have stops start-up and says why', async () => {
  for (const [name, why] of [
    ['   ', /visible letter or digit/],
    ['\u3164', /invisible/],
    ['sеrvice', /mixes scripts/],
    ['ops!', /only letters, digits/],
  ] as const) {
    const error = await startWithName(name);
    assert.instance(error, Error, name);
    assert.match((error as Error).message, /OPERATOR_NAME/);
    assert.match((error as Error).message, why);
  }
});

test('a good OPERATOR_NAME in any one script starts', async () => {
  assert.type(await startWithName('Служба 24'), 'string');
});

test.run();
