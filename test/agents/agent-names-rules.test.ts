import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { directDoor, type DirectDoor } from '../helpers/direct.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { REFUSED_NAMES, TAKEN_NAMES } from '../helpers/direct-agents.ts';

/**
 * Names an agent signs up with, through the direct door: look-alikes of the operator's name are
 * reserved, names that mix scripts or show nothing are refused, and ordinary names in any one
 * script are taken. The same names at the MCP door: agent-names.test.ts.
 */
const test = suite<{ server: TestServer; door: DirectDoor }>(
  'agent names: look-alikes, mixed scripts and empty names, without a transport',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

for (const refusal of REFUSED_NAMES) {
  test(`sign-up refuses ${JSON.stringify(refusal.name)} (${refusal.why}) with ${refusal.code}`, async ({
    door,
  }) => {
    const refused = await door.refusal('sign_up', { name: refusal.name });
    assert.is(refused.code, refusal.code, refused.message);
    assert.is(refused.extra.field, 'name');
    assert.match(refused.message, refusal.hint);
  });
}

for (const name of TAKEN_NAMES) {
  test(`sign-up takes ${JSON.stringify(name)}`, async ({ door }) => {
    assert.is((await door.call('sign_up', { name })).name, name);
  });
}

test.run();
