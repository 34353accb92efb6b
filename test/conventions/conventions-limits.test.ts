import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { conventionCodec, newConvention } from '../../machines/convention.ts';
import { KNOWN_CONVENTIONS } from '../../protocol/conventions/known.ts';
import { insertConvention } from '../../storage/conventions/conventions.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Conventions cannot be registered without bound: one agent may register a fixed number (20 by
 * default), counted in the database so that two processes cannot exceed it together;
 * GET /conventions is paged; and the near-duplicate rules still refuse every kind of near
 * duplicate when hundreds of conventions exist (they find their candidates by index).
 */

type Problem = { code: string; detail: string; limit?: number; existing?: string };
type ConventionList = {
  conventions: { name: string; built_in: boolean; author_id: string | null }[];
  next_cursor: string | null;
};

const BUILT_INS = KNOWN_CONVENTIONS.map((c) => c.name);

/** A convention body with five dimension keys: `keys` if given, else keys of its own. */
function convention(name: string, keys?: readonly string[]) {
  const own = keys ?? Array.from({ length: 5 }, (_, i) => `${name.replaceAll('-', '_')}_k${i}`);
  return {
    name,
    description: `What ${name} listings are about.`,
    dimensions: own.map((key) => ({
      key,
      label: `Label ${key}`,
      description: `What goes in ${key}.`,
    })),
  };
}

/**
 * The n-th of a family of names far apart from each other and from the built-in ones: letters
 * spelled from the number, so that no two are within two edits or share their words.
 */
function farName(prefix: string, n: number): string {
  const letters = 'bcdfghjkmnpqrstvwxz';
  let word = '';
  let rest = n + 1;
  while (rest > 0) {
    word += letters[rest % letters.length];
    rest = Math.floor(rest / letters.length);
  }
  // Each letter three times: two names of different numbers differ in three places at least.
  return `${prefix}-${[...word].map((c) => c.repeat(3)).join('')}`;
}

function register(server: TestServer, token: string, body: unknown) {
  return callJson<Problem & { name: string; status: string }>(
    server,
    'POST',
    '/conventions',
    token,
    body,
  );
}

/** Every convention, page by page through `next_cursor`, with the pages' sizes. */
async function walk(server: TestServer, limit: number) {
  const names: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page = await callJson<ConventionList>(server, 'GET', `/conventions?${query}`, null);
    assert.is(page.status, 200, JSON.stringify(page.body));
    names.push(...page.body.conventions.map((c) => c.name));
    sizes.push(page.body.conventions.length);
    cursor = page.body.next_cursor;
  } while (cursor);
  return { names, sizes };
}

const test = suite<{ server: TestServer; operator: string }>(
  'conventions are bounded per agent, paged, and checked for near-duplicates by index',
);

test.before(async (context) => {
  context.operator = newToken();
  // No cap here: the cap's own test starts a server with the default one.
  context.server = await startTestServer({
    operatorToken: context.operator,
    conventionsPerAgent: 0,
  });
});
test.after(async ({ server }) => {
  await server.close();
});

test('an agent past its 20 conventions is answered 409 limit_reached naming the cap, and nothing is written', async () => {
  const server = await startTestServer();
  try {
    const author = await server.signUp();
    for (let i = 0; i < 20; i++) {
      const made = await register(server, author.api_token, convention(farName('capped', i)));
      assert.is(made.status, 201, `${i}: ${JSON.stringify(made.body)}`);
    }
    const over = await register(server, author.api_token, convention('one-more-convention'));
    assert.is(over.status, 409, JSON.stringify(over.body));
    assert.is(over.body.code, 'limit_reached');
    assert.is(over.body.limit, 20);
    assert.match(over.body.detail, /at most 20/);
    const missing = await callJson(server, 'GET', '/conventions/one-more-convention', null);
    assert.is(missing.status, 404);
    const listed = await walk(server, 500);
    assert.not.ok(listed.names.includes('one-more-convention'));
    assert.is(listed.names.length, BUILT_INS.length + 20);

    // The cap is the agent's, not everyone's: another agent still registers.
    const other = await server.signUp();
    const theirs = await register(server, other.api_token, convention('one-more-convention'));
    assert.is(theirs.status, 201, JSON.stringify(theirs.body));
  } finally {
    await server.close();
  }
});

test('paging walks every convention exactly once, built-in ones first, in JSON and markdown', async ({
  server,
  operator,
}) => {
  const author = await server.signUp();
  const mine: string[] = [];
  for (let i = 0; i < 23; i++) {
    const name = farName('paged', i);
    const made = await register(server, author.api_token, convention(name));
    assert.is(made.status, 201, JSON.stringify(made.body));
    mine.push(name);
  }
  // Two of them placed: they come after the built-in ones, before the unplaced.
  for (const name of [mine[20], mine[3]] as string[]) {
    const placed = await callJson(server, 'POST', `/conventions/${name}/place`, operator, {
      path: ['root', 'zz', name],
    });
    assert.is(placed.status, 200, JSON.stringify(placed.body));
  }

  const first = await callJson<ConventionList>(server, 'GET', '/conventions', null);
  assert.is(first.status, 200);
  assert.equal(
    first.body.conventions.slice(0, BUILT_INS.length).map((c) => c.built_in),
    BUILT_INS.map(() => true),
    'the default page starts with the built-in conventions',
  );
  for (const name of BUILT_INS) {
    assert.ok(
      first.body.conventions.some((c) => c.name === name),
      name,
    );
  }

  const { names, sizes } = await walk(server, 7);
  assert.ok(
    sizes.slice(0, -1).every((size) => size === 7),
    String(sizes),
  );
  assert.is(new Set(names).size, names.length, 'no convention twice');
  const everyOne = await walk(server, 500);
  assert.equal(names, everyOne.names, 'the same order, whatever the page size');
  for (const name of [...BUILT_INS, ...mine]) assert.ok(names.includes(name), name);
  assert.ok(names.indexOf(mine[3] as string) < names.indexOf(mine[0] as string));
  assert.ok(names.indexOf(mine[20] as string) < names.indexOf(mine[0] as string));
  assert.ok(Math.max(...BUILT_INS.map((n) => names.indexOf(n))) < names.indexOf(mine[3] as string));

  // Markdown: each page links the next; every convention appears once along the links.
  const seen: string[] = [];
  let next: string | null = server.url('/conventions?limit=7');
  while (next) {
    const response: Response = await fetch(next);
    assert.is(response.status, 200);
    const text = await response.text();
    for (const [, name] of text.matchAll(/^\| \[([a-z0-9-]+)\]\(/gm)) seen.push(name as string);
    next = /^Next page: (\S+)$/m.exec(text)?.[1] ?? null;
  }
  assert.equal(seen, names);

  const bad = await callJson<Problem>(server, 'GET', '/conventions?cursor=bm90LW91cnM', null);
  assert.is(bad.status, 400);
  assert.is(bad.body.code, 'invalid_cursor');
});

test('with 500 conventions registered, each kind of near-duplicate is still refused, naming the one it copies', async ({
  server,
}) => {
  const author = await server.signUp();
  // Every one shares the key `location`, so that shared keys alone do not make a duplicate.
  const many = Array.from({ length: 500 }, (_, i) => {
    const name = farName('bulk', i);
    const own = Array.from({ length: 4 }, (_, k) => `${name.replaceAll('-', '_')}_k${k}`);
    return convention(name, ['location', ...own]);
  });
  // Written through storage as registration writes them (keys included), in one transaction:
  // registering 500 over HTTP would only make the test slower.
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
  const listed = await walk(server, 500);
  for (const body of many) assert.ok(listed.names.includes(body.name), body.name);
  const keys = ['crane_type', 'lift_tonnes', 'harbour', 'rental_days', 'operator_included'];
  const target = await register(server, author.api_token, convention('harbour-crane-rental', keys));
  assert.is(target.status, 201, JSON.stringify(target.body));

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
    const answer = await register(server, author.api_token, body);
    assert.is(answer.status, 409, `${kind}: ${JSON.stringify(answer.body)}`);
    assert.is(answer.body.code, 'convention_exists', kind);
    assert.is(answer.body.existing, 'harbour-crane-rental', kind);
  }
  const distinct = await register(
    server,
    author.api_token,
    convention('harbour-pilot-booking', ['location', ...fresh(11).slice(0, 4)]),
  );
  assert.is(distinct.status, 201, JSON.stringify(distinct.body));
});

const twoServers = postgresSuite<{ a: TestServer; b: TestServer }>(
  'two servers on one PostgreSQL hold one agent to its convention cap together',
);

twoServers.before(async (context) => {
  const databaseUrl = await freshDatabaseUrl();
  context.a = await startTestServer({ databaseUrl, conventionsPerAgent: 5 });
  context.b = await startTestServer({ databaseUrl, conventionsPerAgent: 5 });
});
twoServers.after(async ({ a, b }) => {
  await a.close();
  await b.close();
});

twoServers(
  'twelve registrations at once through two servers leave exactly five, the rest limit_reached',
  async ({ a, b }) => {
    const author = await a.signUp();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        register(i % 2 === 0 ? a : b, author.api_token, convention(farName('raced', i))),
      ),
    );
    const made = answers.filter((answer) => answer.status === 201);
    const refused = answers.filter((answer) => answer.status === 409);
    assert.is(made.length, 5, JSON.stringify(answers.map((answer) => answer.body)));
    assert.is(refused.length, 7);
    for (const answer of refused) assert.is(answer.body.code, 'limit_reached');
    const listed = await callJson<ConventionList>(a, 'GET', '/conventions?limit=500', null);
    const theirs = listed.body.conventions.filter((c) => c.author_id === author.agent_id);
    assert.is(theirs.length, 5);
  },
);

test.run();
twoServers.run();
