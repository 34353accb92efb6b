import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/** Read-only SQL over the index through POST /index/sql: scopes, refusals, caps, time limits. */
const test = suite<{ server: TestServer }>('read-only SQL over the index');

test.before(async (context) => {
  context.server = await startTestServer({ sqlTimeoutMs: 300 });
});
test.after(async ({ server }) => {
  await server.close();
});

type Agent = TestAgent;
type Answer = {
  status: number;
  body: {
    columns: { name: string; type: string }[];
    rows: unknown[][];
    truncated: boolean;
    code?: string;
    detail?: string;
  };
};

async function sql(server: TestServer, agent: Agent, body: object): Promise<Answer> {
  const response = await server.post('/index/sql', body, agent.api_token);
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

const card = (city: string, price: number) =>
  `---\nconvention: local-services\ncity: ${city}\nprice: ${price}\n---\nBike repair in ${city}.\n`;

test('a query reads the header fields of the files in its scope, and nothing outside it', async ({
  server,
}) => {
  const me = await server.signUp();
  const other = await server.signUp();
  const mine = await newWorkspace(server, me);
  const theirs = await newWorkspace(server, other);
  const open = await newWorkspace(server, other, 'public');
  await saveFile(server, me, mine, 'a.md', card('Berlin', 40));
  await saveFile(server, other, theirs, 'secret.md', card('Paris', 99));
  await saveFile(server, other, open, 'open.md', card('Berlin', 30));
  const own = await sql(server, me, {
    sql: "select path, fields->>'city' as city, (fields->>'price')::int as price from files order by path",
  });
  assert.is(own.status, 200, JSON.stringify(own.body));
  assert.equal(own.body.rows, [['a.md', 'Berlin', 40]]);
  assert.equal(own.body.columns, [
    { name: 'path', type: 'text' },
    { name: 'city', type: 'text' },
    { name: 'price', type: 'integer' },
  ]);
  const all = await sql(server, me, {
    sql: "select path from files where fields->>'city' = $1 order by path",
    scope: 'public',
    params: ['Berlin'],
  });
  assert.equal(all.body.rows, [['open.md']]);
  const versions = await sql(server, other, { sql: 'select count(*) from file_versions' });
  assert.equal(versions.body.rows, [[2]]);
});

test('anything outside the allowed SQL answers 400 sql_not_allowed naming it, and runs nothing', async ({
  server,
}) => {
  const me = await server.signUp();
  for (const [query, named] of [
    ['select * from agents', 'agents'],
    ['delete from files', 'delete'],
    ['select pg_sleep(10)', 'pg_sleep'],
    ['select 1; select 2', 'one'],
  ] as const) {
    const answer = await sql(server, me, { sql: query });
    assert.is(answer.status, 400, query);
    assert.is(answer.body.code, 'sql_not_allowed', query);
    assert.match(answer.body.detail ?? '', new RegExp(named, 'i'), query);
  }
});

test('answers keep repeated column names and stop at 1,000 rows with truncated', async ({
  server,
}) => {
  const me = await server.signUp();
  const answer = await sql(server, me, {
    sql: 'select x as n, x * 2 as n from unnest($1::int[]) as t(x)',
    params: [`{${Array.from({ length: 1200 }, (_, i) => i).join(',')}}`],
  });
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(
    answer.body.columns.map((column) => column.name),
    ['n', 'n'],
  );
  assert.is(answer.body.rows.length, 1000);
  assert.ok(answer.body.truncated);
  assert.equal(answer.body.rows[3], [3, 6]);
});

test('answers stop at 8 MiB of rows too, with truncated', async ({ server }) => {
  const me = await server.signUp();
  const answer = await sql(server, me, {
    sql: 'select x, $1::text as filler from unnest($2::int[]) as t(x)',
    params: ['y'.repeat(10_000), `{${Array.from({ length: 1000 }, (_, i) => i).join(',')}}`],
  });
  assert.is(answer.status, 200, JSON.stringify(answer.body).slice(0, 300));
  assert.ok(answer.body.truncated);
  assert.ok(
    answer.body.rows.length > 800 && answer.body.rows.length < 1000,
    `${answer.body.rows.length}`,
  );
  assert.equal(answer.body.rows[5], [5, 'y'.repeat(10_000)]);
});

test('a query past its time limit answers 408 sql_timeout, and a write sent meanwhile completes', async ({
  server,
}) => {
  const me = await server.signUp();
  const id = await newWorkspace(server, me);
  const big = `{${Array.from({ length: 2000 }, (_, i) => i % 10).join(',')}}`;
  const slow = sql(server, me, {
    sql: 'select count(*) from unnest($1::int[]) a, unnest($1::int[]) b, unnest($1::int[]) c',
    params: [big],
  });
  const write = saveFile(server, me, id, 'during.md', card('Rome', 1));
  const [answer] = await Promise.all([slow, write]);
  assert.is(answer.status, 408, JSON.stringify(answer.body));
  assert.is(answer.body.code, 'sql_timeout');
  const after = await sql(server, me, { sql: 'select path from files' });
  assert.equal(after.body.rows, [['during.md']]);
});

test('a regular expression too complex for the database answers 400 sql_too_complex saying what to simplify, and the next query runs', async ({
  server,
}) => {
  const me = await server.signUp();
  for (const body of [
    // The embedded database answered this one with its internal "bad buffer ID: 0".
    { sql: "select 'a' ~ '(a{1,255}){1,255}'" },
    { sql: 'select count(*) from files where body ~ $1', params: ['(a{1,255}){1,255}'] },
  ]) {
    const answer = await sql(server, me, body);
    assert.is(answer.status, 400, `${body.sql}: ${JSON.stringify(answer.body)}`);
    assert.is(answer.body.code, 'sql_too_complex', JSON.stringify(answer.body));
    assert.match(answer.body.detail ?? '', /regular expression/);
    assert.not.match(answer.body.detail ?? '', /buffer/);
  }
  const wrong = await sql(server, me, { sql: "select 'a' ~ '[a'" });
  assert.is(wrong.body.code, 'invalid_input', 'a malformed one is still the query’s own fault');
  const after = await sql(server, me, { sql: "select 'aaa' ~ '(a{1,3}){1,3}' as ok" });
  assert.equal(after.body.rows, [[true]]);
});

test('elapsed_ms is whole milliseconds', async ({ server }) => {
  const me = await server.signUp();
  const answer = await sql(server, me, { sql: 'select 1' });
  const { elapsed_ms } = answer.body as unknown as { elapsed_ms: number };
  assert.ok(Number.isInteger(elapsed_ms), String(elapsed_ms));
});

test('axis_values finds a place whatever each convention calls the field', async ({ server }) => {
  const me = await server.signUp();
  const id = await newWorkspace(server, me);
  await saveFile(
    server,
    me,
    id,
    'repair.md',
    '---\nconvention: local-services\nlocation: Berlin\nrate: 40 EUR/hour\n---\n',
  );
  await saveFile(
    server,
    me,
    id,
    'lawyer.md',
    '---\nconvention: legal-services\ncity: Berlin\nfee: 200 EUR\n---\n',
  );
  await saveFile(server, me, id, 'plain.md', '---\nmetro: [Potsdam, Berlin]\n---\n');
  await saveFile(
    server,
    me,
    id,
    'elsewhere.md',
    '---\nconvention: legal-services\ncity: Hamburg\nlocation: Berlin\n---\n',
  );
  const places = await sql(server, me, {
    sql: "select path, convention, field from axis_values where axis = 'place' and value = 'Berlin' order by path",
  });
  assert.is(places.status, 200, JSON.stringify(places.body));
  assert.equal(places.body.rows, [
    ['lawyer.md', 'legal-services', 'city'],
    ['plain.md', null, 'metro'],
    ['repair.md', 'local-services', 'location'],
  ]);
  const prices = await sql(server, me, {
    sql: "select path, value from axis_values where axis = 'price' order by path",
  });
  assert.equal(prices.body.rows, [
    ['lawyer.md', '200 EUR'],
    ['repair.md', '40 EUR/hour'],
  ]);
});

test('full-text search finds words of the header and the body by their stem', async ({
  server,
}) => {
  const me = await server.signUp();
  const id = await newWorkspace(server, me);
  await saveFile(
    server,
    me,
    id,
    'bikes.md',
    '---\nname: Repairing bicycles\n---\nWe fix wheels and brakes.\n',
  );
  await saveFile(server, me, id, 'cakes.md', '---\nname: Baking\n---\nCakes to order.\n');
  const found = await sql(server, me, {
    sql: "select path from files where search @@ websearch_to_tsquery('english', $1) order by path",
    params: ['repair wheel'],
  });
  assert.is(found.status, 200, JSON.stringify(found.body));
  assert.equal(found.body.rows, [['bikes.md']]);
  const none = await sql(server, me, {
    sql: "select count(*) from files where search @@ websearch_to_tsquery('english', 'bicycle -brake')",
  });
  assert.equal(none.body.rows, [[0]]);
});

test('leaving a workspace takes its files out of the reach of the one who left', async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const id = await newWorkspace(server, owner);
  const invite = (await (
    await server.post(`/workspaces/${id}/invites`, {}, owner.api_token)
  ).json()) as { invite_token: string };
  const joined = await server.post(
    '/invites/redeem',
    { invite_token: invite.invite_token },
    member.api_token,
  );
  assert.is(joined.status, 200);
  await saveFile(server, owner, id, 'plan.md', card('Oslo', 5));
  const before = await sql(server, member, { sql: 'select path from files' });
  assert.equal(before.body.rows, [['plan.md']]);
  const left = await server.post(`/workspaces/${id}/leave`, {}, member.api_token);
  assert.is(left.status, 200);
  assert.equal(await left.json(), { workspace_id: id, left: true });
  for (const relation of ['files', 'file_versions', 'axis_values']) {
    const after = await sql(server, member, { sql: `select count(*) from ${relation}` });
    assert.equal(after.body.rows, [[0]], relation);
  }
  const owners = await sql(server, owner, { sql: 'select path from files' });
  assert.equal(owners.body.rows, [['plan.md']]);
});

test('every example on /index/protocol runs as written', async ({ server }) => {
  const me = await server.signUp();
  const id = await newWorkspace(server, me);
  await saveFile(
    server,
    me,
    id,
    'bike.md',
    `---\ncity: Berlin\nprice: 40\ntags: [bike]\n---\nBike repair.\n`,
  );
  const page = await (await fetch(server.url('/index/protocol'))).text();
  const block = /```sql\n([\s\S]*?)```/.exec(page)?.[1] ?? '';
  const examples = block
    .split(/^--.*$/m)
    .map((text) => text.trim())
    .filter(Boolean);
  assert.ok(examples.length >= 5, `${examples.length} examples`);
  for (const example of examples) {
    const answer = await sql(server, me, {
      sql: example,
      params: example.includes('$1') ? ['bike.md'] : [],
    });
    assert.is(answer.status, 200, `${example}: ${JSON.stringify(answer.body)}`);
  }
});

test.run();
