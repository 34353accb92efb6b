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
