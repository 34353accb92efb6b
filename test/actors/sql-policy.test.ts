import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadModule, parseSync } from 'libpg-query';
import {
  checkUserSql,
  MAX_NESTING,
  MAX_SQL_LENGTH,
  treeShape,
  type CheckedQuery,
} from '../../actors/index/sql-policy.ts';
import { ServiceError } from '../../protocol/errors.ts';

const test = suite('the SQL policy for the index');

/** [what the test says it refuses, the query, the `refused` it must name] */
const attacks: Array<[string, string, string]> = [
  // statements other than one SELECT
  ['an UPDATE', "update files set path = 'x'", 'UPDATE'],
  ['an INSERT', "insert into files (path) values ('x')", 'INSERT'],
  ['a DELETE', 'delete from files', 'DELETE'],
  ['a MERGE', 'merge into files f using store s on true when matched then delete', 'MERGE'],
  ['a DROP', 'drop table agents', 'DROP'],
  ['a CREATE TABLE', 'create table stolen (a int)', 'CREATE'],
  ['a CREATE TABLE AS', 'create table stolen as select * from files', 'CREATE TABLE AS'],
  ['a TRUNCATE', 'truncate files', 'TRUNCATE'],
  ['an ALTER TABLE', 'alter table files add column x int', 'ALTER TABLE'],
  ['a GRANT', 'grant all on files to public', 'GRANT'],
  ['a COPY', "copy files to '/tmp/stolen'", 'COPY'],
  ['a COPY from a program', "copy files from program 'rm -rf /'", 'COPY'],
  ['a LOCK', 'lock table files', 'LOCK'],
  ['a SET ROLE', 'set role postgres', 'SET'],
  ['a DO block', 'do $$begin perform pg_sleep(1); end$$', 'DO'],
  ['a CALL', 'call some_procedure()', 'CALL'],
  ['an EXPLAIN ANALYZE', 'explain analyze select * from files', 'EXPLAIN'],
  ['a PREPARE', 'prepare p as select 1', 'PREPARE'],
  ['a NOTIFY', 'notify agent_changes', 'NOTIFY'],
  ['a transaction command', 'begin', 'a transaction command (BEGIN, COMMIT, ROLLBACK, ...)'],
  ['two SELECTs', 'select 1; select 2', 'more than one statement'],
  ['a SELECT followed by a DROP', 'select 1; drop table agents', 'more than one statement'],
  [
    'a second statement after a comment',
    'select 1 /* hidden */; delete from files -- and a comment',
    'more than one statement',
  ],
  ['an empty text', '', 'an empty query'],
  ['a text of only a comment', '-- nothing here', 'an empty query'],
  ['a text of only a semicolon', ' ; ', 'an empty query'],
  ['a syntax error', 'select from where', 'syntax error'],
  ['a NUL character hiding a second statement', 'select 1\0; drop table agents', 'a NUL character'],
  ['a text over the length limit', `select 1${' '.repeat(MAX_SQL_LENGTH)}`, 'length'],
  // clauses of a SELECT that write, lock or recurse
  ['FOR UPDATE', 'select * from files for update', 'FOR UPDATE'],
  ['FOR SHARE', 'select * from files for share', 'FOR SHARE'],
  ['FOR UPDATE in a subquery', 'select * from (select * from files for update) x', 'FOR UPDATE'],
  [
    'WITH RECURSIVE in a subquery',
    'select * from (with recursive t(n) as (select 1 union all select n + 1 from t) select * from t) x',
    'WITH RECURSIVE',
  ],
  ['SELECT INTO', 'select * into stolen from files', 'INTO'],
  [
    'WITH RECURSIVE',
    'with recursive t(n) as (select 1 union all select n + 1 from t) select * from t',
    'WITH RECURSIVE',
  ],
  ['a CTE that deletes', 'with d as (delete from files returning *) select * from d', 'DELETE'],
  ['a CTE that updates', "with u as (update files set path = '' returning *) select 1", 'UPDATE'],
  ['TABLESAMPLE', 'select * from files tablesample system (10)', 'TABLESAMPLE'],
  ['ROWS FROM', "select * from rows from (jsonb_each('{}'), unnest(array[1]))", 'ROWS FROM'],
  // relations
  ['a service table', 'select * from agents', 'agents'],
  ['TABLE on a service table', 'table agents', 'agents'],
  [
    'information_schema.tables',
    'select * from information_schema.tables',
    'information_schema.tables',
  ],
  ['pg_class', 'select * from pg_class', 'pg_class'],
  [
    'a schema-qualified catalogue table',
    'select * from pg_catalog.pg_class',
    'pg_catalog.pg_class',
  ],
  ['a schema-qualified index relation', 'select * from public.files', 'public.files'],
  ['a service table in a join', 'select * from files natural join agents', 'agents'],
  [
    'a service table in a WHERE subquery',
    'select * from files where path in (select name from agents)',
    'agents',
  ],
  [
    'a forbidden relation in a subquery passed to a function',
    'select lower((select relname from pg_class limit 1))',
    'pg_class',
  ],
  ['a service table in an ARRAY subquery', 'select array(select name from agents)', 'agents'],
  [
    'a service table in a materialized CTE',
    'with x as materialized (select * from agents) select 1',
    'agents',
  ],
  [
    'a CTE named after a service table that reads that table (a CTE does not see itself)',
    'with agents as (select * from agents) select * from agents',
    'agents',
  ],
  [
    'a service table named outside the scope of a CTE of the same name',
    'select * from (with agents as (select 1) select * from agents) a, agents',
    'agents',
  ],
  [
    'a later sibling CTE named before it is defined',
    'with a as (select * from agents), agents as (select 1) select * from a',
    'agents',
  ],
  ['a unicode-escaped service table', 'select * from U&"\\0061gents"', 'agents'],
  // columns
  ['the system column ctid', 'select ctid, * from files', 'ctid'],
  ['a qualified system column', 'select f.xmin from files f', 'xmin'],
  ['a system column in USING', 'select * from files join store using (ctid)', 'ctid'],
  ['a three-part name', 'select a.b.c from files', 'a.b.c'],
  // functions
  ['pg_sleep', 'select pg_sleep(10)', 'pg_sleep'],
  ['a qualified pg_sleep', 'select pg_catalog.pg_sleep(1)', 'pg_catalog.pg_sleep'],
  ['a qualified allowed function', "select pg_catalog.lower('x')", 'pg_catalog.lower'],
  ['pg_read_file', "select pg_read_file('/etc/passwd')", 'pg_read_file'],
  [
    'pg_read_file with a dollar-quoted argument',
    'select pg_read_file($$/etc/passwd$$)',
    'pg_read_file',
  ],
  ['a function name split by a comment', 'select pg_sleep/**/(1)', 'pg_sleep'],
  ['a unicode-escaped pg_sleep', 'select U&"pg\\005fsleep"(1)', 'pg_sleep'],
  ['set_config', "select set_config('role', 'postgres', false)", 'set_config'],
  ['current_setting', "select current_setting('data_directory')", 'current_setting'],
  ['version', 'select version()', 'version'],
  ['txid_current, which takes a transaction id', 'select txid_current()', 'txid_current'],
  ['nextval, which writes', "select nextval('seq')", 'nextval'],
  ['lo_import', "select lo_import('/etc/passwd')", 'lo_import'],
  ['dblink', "select * from dblink('host=evil', 'select 1') as t(a int)", 'dblink'],
  [
    'pg_sleep in a LATERAL subquery',
    'select * from files, lateral (select pg_sleep(1)) x',
    'pg_sleep',
  ],
  ['pg_sleep in ORDER BY', 'select path from files order by pg_sleep(1)', 'pg_sleep'],
  ['pg_sleep in a window', 'select sum(size) over (order by pg_sleep(1)) from files', 'pg_sleep'],
  [
    'pg_sleep in a FILTER',
    'select count(*) filter (where pg_sleep(1) is null) from files',
    'pg_sleep',
  ],
  ['pg_sleep in a top-level VALUES', 'values (pg_sleep(1))', 'pg_sleep'],
  ['generate_series over a huge range', 'select generate_series(1, 1000000000)', 'generate_series'],
  ['generate_series in FROM', 'select * from generate_series(1, 1e9)', 'generate_series'],
  ['repeat, a memory bomb', "select repeat('x', 1000000000)", 'repeat'],
  ['lpad, a memory bomb', "select lpad('x', 1000000000)", 'lpad'],
  ['format with a huge width', "select format('%1000000000s', 'x')", 'format'],
  ['COLLATION FOR', "select collation for ('x')", 'pg_catalog.pg_collation_for'],
  ['SYSTEM_USER', 'select system_user', 'pg_catalog.system_user'],
  ['CURRENT_USER', 'select current_user', 'CURRENT_USER'],
  ['SESSION_USER', 'select session_user', 'SESSION_USER'],
  ['XML functions', 'select xmlelement(name a)', 'XML functions'],
  ['XMLTABLE', "select * from xmltable('/a' passing '<a/>' columns x int path '.')", 'XMLTABLE'],
  // calls in disguise: PostgreSQL reads x.f as f(x) when x has no column f
  [
    'field selection that calls a function on a value',
    "select ('server_version'::text).current_setting",
    '.current_setting',
  ],
  [
    'a qualified name that calls a function on a FROM function value',
    "select t.current_setting from unnest(array['server_version']) t",
    't.current_setting',
  ],
  [
    'a qualified name that calls a function named like the alias of a FROM function',
    "select current_setting.current_setting from unnest(array['server_version']) current_setting(v)",
    'current_setting.current_setting',
  ],
  [
    'a qualified name that calls a function on an unaliased FROM function',
    "select unnest.current_setting from unnest(array['server_version'])",
    'unnest.current_setting',
  ],
  [
    'a qualified name that calls a pg_ function on a whole row',
    'select f.pg_column_size from files f',
    'f.pg_column_size',
  ],
  [
    'an expression other than a call in FROM',
    "select * from cast('x' as text) t",
    'an expression other than a function call in FROM',
  ],
  // operators, types, collations
  ['a qualified operator', 'select 1 operator(pg_catalog.=) 1', 'OPERATOR(pg_catalog.=)'],
  ['an operator outside the list', 'select path from files order by path using ~<~', '~<~'],
  ['a cast to regclass', "select 'agents'::regclass", '::regclass'],
  ['a cast to regclass inside a cast to oid', "select 'files'::regclass::oid", '::regclass'],
  ['a cast to oid', 'select 1::oid', '::oid'],
  ['a cast to a schema-qualified type', 'select path::public.text from files', '::public.text'],
  ['a collation other than C', 'select path collate "de_DE" from files', 'COLLATE "de_DE"'],
  // sizes
  ['a parameter past the limit', 'select $101', '$101'],
  [
    'nesting past the limit',
    `select ${'lower('.repeat(MAX_NESTING)}'x'${')'.repeat(MAX_NESTING)}`,
    'nesting',
  ],
];

/** [what the test says it allows, the query, the relations, the parameter count] */
const goodQueries: Array<[string, string, string[], number]> = [
  [
    'a plain listing with ORDER BY, LIMIT and OFFSET',
    'select path, size from files order by saved_at desc limit 10 offset 20',
    ['files'],
    0,
  ],
  [
    'a join of files and store',
    "select f.path, s.fields->>'city' as city from files f join store s on s.path = f.path",
    ['files', 'store'],
    0,
  ],
  [
    'a field of the YAML header',
    "select path from store where fields->>'city' = 'Berlin'",
    ['store'],
    0,
  ],
  ['jsonb containment', `select path from store where fields @> '{"city":"Berlin"}'`, ['store'], 0],
  [
    'an aggregate with GROUP BY and HAVING',
    "select fields->>'city' as city, count(*) from store group by 1 having count(*) > 2 order by 2 desc",
    ['store'],
    0,
  ],
  [
    'a window function',
    "select path, row_number() over (partition by fields->>'city' order by saved_at desc) from store",
    ['store'],
    0,
  ],
  [
    'a named window with lag and lead',
    'select lag(size) over w, lead(size) over w from files window w as (order by saved_at)',
    ['files'],
    0,
  ],
  [
    'a CTE that aliases an index relation',
    "with berlin as (select * from store where fields->>'city' = 'Berlin') select count(*) from berlin",
    ['store'],
    0,
  ],
  [
    'a CTE named after an index relation',
    'with files as (select * from store) select * from files',
    ['files', 'store'],
    0,
  ],
  [
    'a CTE named after a service table',
    'with agents as (select 1 as x) select x from agents',
    [],
    0,
  ],
  [
    'a CTE that reads an earlier one',
    'with a as (select path from files), b as (select * from a) select * from b',
    ['files'],
    0,
  ],
  ['parameters', "select * from store where fields->>'owner' = $1 and saved_at > $2", ['store'], 2],
  ['a parameter used as an array', 'select path from files where size = any($3)', ['files'], 3],
  [
    'full-text search',
    "select path, ts_rank(to_tsvector('english', body), websearch_to_tsquery('english', $1)) as rank from store where to_tsvector('english', body) @@ websearch_to_tsquery('english', $1) order by rank desc limit 5",
    ['store'],
    1,
  ],
  [
    'CASE and COALESCE',
    "select case when size > 1000 then 'big' else 'small' end, coalesce(content_type, 'unknown') from files",
    ['files'],
    0,
  ],
  [
    'GREATEST, LEAST, NULLIF and abs',
    "select greatest(size, 0), least(size, 10), nullif(content_type, ''), abs(-size) from files",
    ['files'],
    0,
  ],
  [
    'an IN list',
    "select * from files where content_type in ('text/markdown', 'text/plain')",
    ['files'],
    0,
  ],
  [
    'a subquery in WHERE',
    "select * from files where path in (select path from store where fields ? 'due')",
    ['files', 'store'],
    0,
  ],
  [
    'a correlated EXISTS',
    'select path from files where exists (select 1 from file_versions v where v.path = files.path and v.version > 1)',
    ['files', 'file_versions'],
    0,
  ],
  [
    'jsonb_array_elements_text in FROM',
    "select s.path, tag from store s, jsonb_array_elements_text(s.fields->'tags') as tag",
    ['store'],
    0,
  ],
  [
    'a LATERAL FROM function with a column alias',
    "select s.path, t.tag from store s cross join lateral jsonb_array_elements_text(s.fields->'tags') as t(tag)",
    ['store'],
    0,
  ],
  [
    'the columns of jsonb_each',
    'select e.key, count(*) from store, jsonb_each(fields) e group by e.key',
    ['store'],
    0,
  ],
  ['unnest in FROM', 'select u, unnest.unnest from unnest(array[1, 2]) u, unnest(array[3])', [], 0],
  [
    'a LEFT JOIN LATERAL subquery',
    'select * from files f left join lateral (select count(*) from file_versions v where v.path = f.path) c on true',
    ['files', 'file_versions'],
    0,
  ],
  [
    'LIKE, ILIKE, regular expressions and BETWEEN',
    "select path from files where path ~ '^notes/' and path not ilike '%draft%' and size between 10 and 1000",
    ['files'],
    0,
  ],
  [
    'SIMILAR TO and LIKE with ESCAPE',
    "select path from files where path similar to 'a%' and path like 'a!%' escape '!'",
    ['files'],
    0,
  ],
  [
    'date arithmetic',
    "select path, version, saved_at from file_versions where path like 'notes/%' and saved_at >= now() - interval '7 days'",
    ['file_versions'],
    0,
  ],
  [
    'date_trunc and sum by day',
    "select date_trunc('day', saved_at) as day, sum(size) from file_versions group by 1 order by 1",
    ['file_versions'],
    0,
  ],
  [
    'EXTRACT, SUBSTRING, POSITION and TRIM',
    "select extract(year from saved_at), substring(path from 1 for 5), position('/' in path), trim(both ' ' from path) from files",
    ['files'],
    0,
  ],
  ['AT TIME ZONE', "select now() at time zone 'UTC'", [], 0],
  [
    'ROLLUP',
    'select axis, value, count(*) from axis_values group by rollup (axis, value)',
    ['axis_values'],
    0,
  ],
  [
    'jsonb subscripts and path operators',
    "select (fields->'tags')[0], fields #>> '{a,b}', jsonb_typeof(fields) from store",
    ['store'],
    0,
  ],
  [
    'DISTINCT ON',
    'select distinct on (path) path, version from file_versions order by path, version desc',
    ['file_versions'],
    0,
  ],
  [
    'UNION ALL and EXCEPT',
    'select path from files union all select path from file_versions except select path from store',
    ['files', 'file_versions', 'store'],
    0,
  ],
  [
    'aggregates with FILTER, ORDER BY and DISTINCT',
    "select count(*) filter (where size > 10), string_agg(path, ', ' order by path), array_agg(distinct content_type), bool_and(size > 0) from files",
    ['files'],
    0,
  ],
  [
    'casts to the allowed types',
    "select path::text, size::bigint, saved_at::date, '{}'::jsonb, '1 day'::interval, array['a']::text[], size::numeric(10,2), size::double precision, '00000000-0000-0000-0000-000000000000'::uuid from files",
    ['files'],
    0,
  ],
  ['COLLATE "C"', 'select path collate "C" from files order by 1', ['files'], 0],
  ['CURRENT_DATE and its kin', 'select current_date, current_timestamp, localtimestamp', [], 0],
  [
    'string literals of every kind',
    "select 'it''s', e'a\\nb', $tag$dollar$tag$, U&'\\0041', e'\\x27; drop table agents; --', 1.5e3, true, null",
    [],
    0,
  ],
  ['quoted identifiers', 'select "Path", "select" from files as "F"', ['files'], 0],
  ['a comment, which is dropped', 'select 1 /* a comment */ -- another\n', [], 0],
  ['a top-level VALUES', "values (1, 'a'), (2, 'b')", [], 0],
  ['TABLE on an index relation', 'table files', ['files'], 0],
  [
    'nesting up to the limit',
    `select ${'lower('.repeat(MAX_NESTING - 5)}'x'${')'.repeat(MAX_NESTING - 5)}`,
    [],
    0,
  ],
  [
    'a text of exactly the length limit',
    `select 1${' '.repeat(MAX_SQL_LENGTH - 'select 1'.length)}`,
    [],
    0,
  ],
];

async function refusal(sql: string): Promise<ServiceError> {
  try {
    await checkUserSql(sql);
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
  throw new Error(`the query was allowed: ${sql}`);
}

for (const [what, sql, refused] of attacks) {
  test(`refuses ${what}, naming ${refused}`, async () => {
    const error = await refusal(sql);
    assert.is(error.code, 'sql_not_allowed');
    assert.is(error.extra.refused, refused);
    assert.ok(error.message.includes(refused), `detail "${error.message}" names ${refused}`);
  });
}

test('holds at least 45 attacks and 20 good queries', () => {
  assert.ok(attacks.length >= 45);
  assert.ok(goodQueries.length >= 20);
});

for (const [what, sql, relations, parameterCount] of goodQueries) {
  test(`allows ${what}, and what it returns reads as the query sent`, async () => {
    let checked: CheckedQuery;
    try {
      checked = await checkUserSql(sql);
    } catch (error) {
      throw new Error(`refused: ${(error as Error).message}`);
    }
    assert.equal(checked.relations, relations);
    assert.is(checked.parameterCount, parameterCount);
    assert.is(treeShape(parseSync(checked.text)), treeShape(parseSync(sql)));
    assert.is(parseSync(checked.text).stmts?.length, 1);
  });
}

test('comments are dropped from the text that runs', async () => {
  const checked = await checkUserSql('select 1 /* a comment */ -- another\n');
  assert.is(checked.text, 'SELECT 1');
});

test('a syntax error carries the parser message', async () => {
  const error = await refusal('select from where');
  assert.ok(error.message.includes('syntax error at or near "where"'), error.message);
});

test('a refused function is named with the functions that are allowed', async () => {
  const error = await refusal('select pg_sleep(1)');
  assert.ok(error.message.includes('count, sum'), error.message);
});

test('a check takes well under a millisecond once the parser is loaded', async () => {
  await loadModule();
  const sql =
    "select f.path, s.fields->>'city' from files f join store s on s.path = f.path where s.fields @> $1 order by f.saved_at desc limit 20";
  await checkUserSql(sql);
  const runs = 500;
  const started = performance.now();
  for (let run = 0; run < runs; run += 1) await checkUserSql(sql);
  const each = (performance.now() - started) / runs;
  assert.ok(each < 2, `${each.toFixed(3)} ms each`);
});

test('the largest query allowed is still checked quickly', async () => {
  const nested = `(select ${'lower('.repeat(40)}'x'${')'.repeat(40)})`;
  const parts: string[] = [];
  while (`select ${[...parts, nested].join(', ')}`.length <= MAX_SQL_LENGTH) parts.push(nested);
  const started = performance.now();
  await checkUserSql(`select ${parts.join(', ')}`);
  const took = performance.now() - started;
  assert.ok(took < 200, `${took.toFixed(1)} ms`);
});

test.run();
