import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CAPABILITIES } from '../../actors/capabilities.ts';
import { HANDLERS } from '../../actors/handlers.ts';
import type { Capability } from '../../actors/kernel/capability.ts';
import type { PersistentActor } from '../../actors/kernel/registry.ts';
import { Services, type ServiceConfig } from '../../actors/kernel/services.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import type { Driver } from '../../storage/driver.ts';
import { openTestDriver } from '../helpers/storage.ts';

const test = suite<{ driver: Driver }>('capabilities plug themselves in');

const CONFIG: ServiceConfig = {
  baseUrl: 'http://service.test',
  operatorName: 'service',
  termsUrl: 'http://service.test/terms',
  privacyUrl: 'http://service.test/privacy',
  mailJoinAddress: 'join@service.test',
  actorCapacity: 10,
};

/** A capability with one actor kind whose loads are counted, as a new capability would be. */
function probeCapability(loads: string[]): Capability {
  const actor = (): PersistentActor => ({
    version: 1,
    persist: async () => 1,
    apply: () => undefined,
  });
  return {
    name: 'probe',
    handlers: {},
    actors: [
      {
        kind: 'probe',
        registry: 'probes',
        load: async (id) => {
          loads.push(id);
          return actor();
        },
        lock: async () => 1,
      },
    ],
  };
}

test.before(async (context) => {
  context.driver = await openTestDriver('pglite');
});
test.after(async ({ driver }) => {
  await driver.close();
});

test('every operation has exactly one handler, from exactly one capability', () => {
  assert.equal(Object.keys(HANDLERS).sort(), Object.keys(OPERATIONS).sort());
  const owners = new Map<string, string[]>();
  for (const capability of CAPABILITIES) {
    for (const name of Object.keys(capability.handlers)) {
      owners.set(name, [...(owners.get(name) ?? []), capability.name]);
    }
  }
  const shared = [...owners].filter(([, names]) => names.length > 1);
  assert.equal(shared, []);
});

test('each actor kind of the list gets its registry on the services, under its name', ({
  driver,
}) => {
  const services = new Services(driver, CONFIG, CAPABILITIES);
  const members = services as unknown as Record<string, unknown>;
  for (const capability of CAPABILITIES) {
    for (const kind of capability.actors ?? []) {
      assert.ok(members[kind.registry], `${capability.name} has services.${kind.registry}`);
    }
  }
  assert.ok(services.workspaces && services.agents && services.deals && services.conventions);
});

test('a new capability added to the list gets a registry that loads through its own kind', async ({
  driver,
}) => {
  const loads: string[] = [];
  const services = new Services(driver, CONFIG, [...CAPABILITIES, probeCapability(loads)]);
  const probes = (services as unknown as Record<string, { get(id: string): Promise<unknown> }>)
    .probes;
  assert.ok(probes, 'services.probes is there');
  await probes.get('one');
  await probes.get('one');
  assert.equal(loads, ['one']);
  await services.flush();
});

test('two actor kinds of one name, or a member provided twice, stop start-up', ({ driver }) => {
  assert.throws(
    () => new Services(driver, CONFIG, [probeCapability([]), probeCapability([])]),
    /Two actor kinds are named probe/,
  );
  const services = new Services(driver, CONFIG, []);
  services.provide('helpWorkspaceId', 'a');
  assert.throws(() => services.provide('helpWorkspaceId', 'b'), /already have helpWorkspaceId/);
});

test.run();
