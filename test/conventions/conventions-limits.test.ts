import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { KNOWN_CONVENTIONS } from '../../protocol/conventions/known.ts';
import { convention, farName } from '../helpers/direct-conventions.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * What only the doors show of the conventions' bounds: GET /conventions is paged in JSON and in
 * markdown, and one agent's cap is counted in the database so that two processes cannot exceed
 * it together. The cap and the near-duplicate rules are in conventions-limits-rules.test.ts,
 * through the direct door.
 */

type Problem = { code: string; detail: string; limit?: number; existing?: string };
type ConventionList = {
  conventions: { name: string; built_in: boolean; author_id: string | null }[];
  next_cursor: string | null;
};

const BUILT_INS = KNOWN_CONVENTIONS.map((c) => c.name);

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
  'conventions are paged in JSON and markdown, through HTTP',
);

test.before(async (context) => {
  context.operator = newToken();
  // No cap here: the cap's own test (conventions-limits-rules.test.ts) has the default one.
  context.server = await startTestServer({
    operatorToken: context.operator,
    conventionsPerAgent: 0,
  });
});
test.after(async ({ server }) => {
  await server.close();
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
