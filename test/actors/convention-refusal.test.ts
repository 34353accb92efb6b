import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { directDoor, type DirectAgent, type DirectDoor } from '../helpers/direct.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The operator refuses a convention (refuse_convention), through the direct door: only the
 * operator may, its author is told why, and no listing may be posted on it any more.
 */
type Context = { server: TestServer; door: DirectDoor; operatorToken: string };
const test = suite<Context>('refusing a convention, without a transport');

test.before(async (context) => {
  context.operatorToken = newToken();
  context.server = await startTestServer({ operatorToken: context.operatorToken });
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

/** A new agent and the unplaced convention `name` it registered, with five dimensions. */
async function authorOf(door: DirectDoor, name: string): Promise<DirectAgent> {
  const author = await door.signUp();
  const registered = await door.call(
    'register_convention',
    {
      name,
      description: `What ${name} listings are about.`,
      dimensions: ['town', 'k1', 'k2', 'k3', 'k4']
        .map((suffix) => `${name.replaceAll('-', '_')}_${suffix}`)
        .map((key) => ({
          key,
          label: `Label ${key}`,
          description: `What goes in ${key}.`,
        })),
    },
    author.api_token,
  );
  assert.equal(registered, { name, status: 'unplaced' });
  return author;
}

const listingOn = (convention: string) => ({
  kind: 'can' as const,
  convention,
  name: 'Morning walks',
  description: 'An hour in the park.',
  can: 'I walk your dog every morning.',
  dimensions: { [`${convention.replaceAll('-', '_')}_town`]: 'Berlin' },
});

test('refuse_convention is the operator’s alone: to its author and to anyone else it answers 404 not_found, and the convention stays unplaced', async ({
  door,
}) => {
  const author = await authorOf(door, 'dog-walking');
  const stranger = await door.signUp();
  for (const caller of [author, stranger]) {
    const refused = await door.refusal(
      'refuse_convention',
      { name: 'dog-walking', reason: 'Not a service.' },
      caller.api_token,
    );
    assert.is(refused.code, 'not_found');
  }
  const shown = await door.call('get_convention', { name: 'dog-walking' }, author.api_token);
  assert.is(shown.status, 'unplaced');
});

test('a refused convention shows refused, its author hears convention.placed with the reason, and takes no new listing', async ({
  door,
  operatorToken,
}) => {
  const author = await authorOf(door, 'plant-watering');
  const before = await door.call('post_listing', listingOn('plant-watering'), author.api_token);
  assert.ok(before.listing_id, 'a listing goes on an unplaced convention');
  await door.call('changes', {}, author.api_token);

  const refused = await door.call(
    'refuse_convention',
    { name: 'plant-watering', reason: 'Duplicate of garden-care.' },
    operatorToken,
  );
  assert.equal(refused, {
    name: 'plant-watering',
    status: 'refused',
    reason: 'Duplicate of garden-care.',
  });
  const shown = await door.call('get_convention', { name: 'plant-watering' }, author.api_token);
  assert.is(shown.status, 'refused');

  const { changes } = await door.call('changes', {}, author.api_token);
  const told = changes.filter((change) => change.type === 'convention.placed');
  assert.is(told.length, 1, JSON.stringify(changes.map((change) => change.type)));
  assert.is(told[0]?.data.status, 'refused');
  assert.is(told[0]?.data.reason, 'Duplicate of garden-care.');

  const posting = await door.refusal('post_listing', listingOn('plant-watering'), author.api_token);
  assert.is(posting.code, 'listing_invalid');
  assert.equal(posting.extra.problems, [
    { field: 'convention', problem: 'the operators refused "plant-watering": pick another' },
  ]);
});

test('refusing a convention that does not exist answers 404 not_found', async ({
  door,
  operatorToken,
}) => {
  const refused = await door.refusal(
    'refuse_convention',
    { name: 'no-such-convention', reason: 'Not a service.' },
    operatorToken,
  );
  assert.is(refused.code, 'not_found');
});

test.run();
