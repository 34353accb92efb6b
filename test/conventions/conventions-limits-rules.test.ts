import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { conventionCodec, newConvention } from '../../machines/convention.ts';
import { KNOWN_CONVENTIONS } from '../../protocol/conventions/known.ts';
import { insertConvention } from '../../storage/conventions/conventions.ts';
import { directDoor, type DirectDoor } from '../helpers/direct.ts';
import { conventionNames, convention, farName } from '../helpers/direct-conventions.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Conventions cannot be registered without bound: one agent may register a fixed number (20 by
 * default); and the near-duplicate rules still refuse every kind of near duplicate when hundreds
 * of conventions exist (they find their candidates by index). Through the direct door:
 * conventions-limits.test.ts keeps the paging in markdown and the cap held by two servers.
 */

const BUILT_INS = KNOWN_CONVENTIONS.map((c) => c.name);

const test = suite<{ server: TestServer; door: DirectDoor }>(
  'conventions are bounded per agent and checked for near-duplicates by index, without a transport',
);

test.before(async (context) => {
  // No cap here: the cap's own test starts a server with the default one.
  context.server = await startTestServer({ conventionsPerAgent: 0 });
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

test('an agent past its 20 conventions is answered 409 limit_reached naming the cap, and nothing is written', async () => {
  const server = await startTestServer();
  try {
    const door = directDoor(server.services);
    const author = await door.signUp();
    for (let i = 0; i < 20; i++) {
      await door.call('register_convention', convention(farName('capped', i)), author.api_token);
    }
    const over = await door.refusal(
      'register_convention',
      convention('one-more-convention'),
      author.api_token,
    );
    assert.is(over.code, 'limit_reached');
    assert.is(over.extra.limit, 20);
    assert.match(over.message, /at most 20/);
    const missing = await door.refusal('get_convention', { name: 'one-more-convention' });
    assert.is(missing.code, 'not_found');
    const listed = await conventionNames(door, 500);
    assert.not.ok(listed.includes('one-more-convention'));
    assert.is(listed.length, BUILT_INS.length + 20);

    // The cap is the agent's, not everyone's: another agent still registers.
    const other = await door.signUp();
    const theirs = await door.call(
      'register_convention',
      convention('one-more-convention'),
      other.api_token,
    );
    assert.is(theirs.name, 'one-more-convention');
  } finally {
    await server.close();
  }
});

test('with 500 conventions registered, each kind of near-duplicate is still refused, naming the one it copies', async ({
  server,
  door,
}) => {
  const author = await door.signUp();
  // Every one shares the key `location`, so that shared keys alone do not make a duplicate.
  const many = Array.from({ length: 500 }, (_, i) => {
    const name = farName('bulk', i);
    const own = Array.from({ length: 4 }, (_, k) => `${name.replaceAll('-', '_')}_k${k}`);
    return convention(name, ['location', ...own]);
  });
  // Written through storage as registration writes them (keys included), in one transaction:
  // registering 500 one by one would only make the test slower.
  await server.services.driver.transaction(async (tx) => {
    for (const body of many) {
      await insertConvention(tx, {
        ...body,
        authorId: author.agent_id,
        createdAt: new Date(),
        machine: conventionCodec.persist(newConvention(body.name)),
      });
    }
  });
  const listed = await conventionNames(door, 500);
  for (const body of many) assert.ok(listed.includes(body.name), body.name);
  const keys = ['crane_type', 'lift_tonnes', 'harbour', 'rental_days', 'operator_included'];
  await door.call(
    'register_convention',
    convention('harbour-crane-rental', keys),
    author.api_token,
  );

  const fresh = (n: number) => Array.from({ length: 5 }, (_, k) => `fresh_${n}_${k}`);
  const nearDuplicates: [string, ReturnType<typeof convention>][] = [
    ['separators ignored', convention('harbourcrane-rental', fresh(1))],
    ['two substitutions', convention('harbxur-crane-rentxl', fresh(2))],
    ['two deletions', convention('arbour-crane-renta', fresh(3))],
    ['two insertions', convention('harbourr-crane-rentall', fresh(4))],
    ['two edits at the start', convention('xxrbour-crane-rental', fresh(5))],
    ['two edits at the end', convention('harbour-crane-rentaxx', fresh(6))],
    ['two edits inside', convention('harbour-cxxne-rental', fresh(7))],
    ['two insertions before the last third', convention('hharbour-craane-rental', fresh(12))],
    ['two deletions before the last third', convention('arbour-cane-rental', fresh(13))],
    ['two insertions after the first third', convention('harbour-crane-rrentall', fresh(14))],
    ['an insertion and a deletion', convention('harbour-crane-rentl-x', fresh(8))],
    ['words in another order', convention('rental-harbour-crane', fresh(9))],
    ['words in another order, plural', convention('rentals-cranes-harbour', fresh(10))],
    ['the same keys under another name', convention('quay-lifting-hire', keys)],
    // Its five keys and one more: 5 shared of 6 (83%), whichever key the extra one is.
    ...Array.from(
      { length: 10 },
      (_, i) =>
        [
          `its keys and the extra key extra_${i}`,
          convention(farName('dockside', i), [...keys, `extra_${i}`]),
        ] as [string, ReturnType<typeof convention>],
    ),
  ];
  for (const [kind, body] of nearDuplicates) {
    const refused = await door.refusal('register_convention', body, author.api_token);
    assert.is(refused.code, 'convention_exists', `${kind}: ${refused.message}`);
    assert.is(refused.extra.existing, 'harbour-crane-rental', kind);
  }
  const distinct = await door.call(
    'register_convention',
    convention('harbour-pilot-booking', ['location', ...fresh(11).slice(0, 4)]),
    author.api_token,
  );
  assert.is(distinct.name, 'harbour-pilot-booking');
});

test.run();
