import { attackSuite, database, inert, policy, type Attack } from '../helpers/index-attacks.ts';

/**
 * Attacks on read-only SQL over the index (test/helpers/index-attacks.ts says how each is run
 * and what stops it) that try to reach past its four relations: other relations, settings and
 * the session, server functions, statements hidden in the text, anything but a plain SELECT,
 * and casts that look the catalogue up. Rows out of reach, and time, memory and errors, have
 * files of their own (index-attacks-*.test.ts).
 */

/**
 * Column notation `t.f` calls the one-argument function f on t when t has no column f. The
 * policy knows the columns of each function in FROM by its alias; one alias may name several
 * items in one query (an outer `t(f)`, an inner `t` that is a lone text value), and `t.f` is
 * let through only when every item of that name has the column (this once pooled them).
 */
const shadowedCall = (fn: string, argument: string) =>
  `(select jsonb_agg(s.x) from (select t.${fn} as x from unnest(array[${argument}]) t) s)`;

const ATTACKS: Attack[] = [
  // Other relations than the four the index offers.
  {
    tries: 'Reading pg_catalog.pg_class',
    sql: 'select relname from pg_catalog.pg_class',
    stop: policy('pg_catalog.pg_class'),
  },
  {
    tries: 'Reading pg_class unqualified',
    sql: 'select relname from pg_class',
    stop: policy('pg_class'),
  },
  {
    tries: 'Reading information_schema.tables',
    sql: 'select table_name from information_schema.tables',
    stop: policy('information_schema.tables'),
  },
  {
    tries: 'Reading pg_authid',
    sql: 'select rolname, rolpassword from pg_authid',
    stop: policy('pg_authid'),
  },
  {
    tries: "Reading the service's agents table",
    sql: 'select * from agents',
    stop: policy('agents'),
  },
  {
    tries: "Reading the service's changes table",
    sql: 'select * from changes',
    stop: policy('changes'),
  },
  {
    tries: 'Reading workspace_members',
    sql: 'select * from workspace_members',
    stop: policy('workspace_members'),
  },
  {
    tries: 'Reading indexed_versions, under the scope views',
    sql: 'select path, fields from indexed_versions',
    stop: policy('indexed_versions'),
  },
  {
    tries: 'Reading the unfiltered view agent_index.indexed',
    sql: 'select path, body from agent_index.indexed',
    stop: policy('agent_index.indexed'),
  },
  {
    tries: 'Reading public.files, past the CTE of the same name',
    sql: 'select * from public.files',
    stop: policy('public.files'),
  },
  {
    tries: 'Reading pg_class from a subquery in WHERE',
    sql: 'select path from files where path = any (select relname::text from pg_class)',
    stop: policy('pg_class'),
  },
  {
    tries: 'Naming a table before the WITH query of the same name is defined',
    sql: 'with a as (select * from pg_authid), pg_authid as (select 1) select * from a',
    stop: policy('pg_authid'),
  },
  {
    tries: 'A Unicode-escaped identifier spelling pg_class',
    sql: 'select * from U&"\\0070g_class"',
    stop: policy('pg_class'),
  },

  // Settings, the session and the server.
  {
    tries: "Switching role with set_config('role', ...)",
    sql: "select set_config('role', 'postgres', false)",
    stop: policy('set_config'),
  },
  {
    tries: 'Reading a setting with current_setting',
    sql: "select current_setting('agent_index.caller')",
    stop: policy('current_setting'),
  },
  {
    tries: 'Calling current_setting by field selection on a value',
    sql: "select ('server_version'::text).current_setting",
    stop: policy('.current_setting'),
  },
  {
    tries: 'Calling current_setting by column notation on a FROM function',
    sql: "select t.current_setting from unnest(array['server_version']) t",
    stop: policy('t.current_setting'),
  },
  {
    tries: 'Calling current_setting by column notation on an alias shadowed in a subquery',
    sql: `select ${shadowedCall('current_setting', "'server_version'")} from unnest(array[1]) t(current_setting)`,
    stop: policy('t.current_setting'),
  },
  {
    tries:
      'Running arbitrary SQL through ts_stat on a shadowed alias, first taking back the superuser role',
    sql: `select ${shadowedCall('ts_stat', '$1')} as became, ${shadowedCall('ts_stat', '$2')} as agents from unnest(array[1]) t(ts_stat)`,
    params: () => [
      "select to_tsvector('simple', set_config('role', session_user, true))",
      "select to_tsvector('simple', 'agents ' || count(*)) from public.agents",
    ],
    stop: policy('t.ts_stat'),
  },
  {
    tries: 'Calling current_setting on the whole row of files',
    sql: 'select f.current_setting from files f',
    stop: database(/column f\.current_setting does not exist/),
  },
  { tries: 'Reading the server version', sql: 'select version()', stop: policy('version') },
  { tries: 'Reading CURRENT_USER', sql: 'select current_user', stop: policy('CURRENT_USER') },
  {
    tries: 'Calling pg_sleep qualified with pg_catalog',
    sql: 'select pg_catalog.pg_sleep(1)',
    stop: policy('pg_catalog.pg_sleep'),
  },
  {
    tries: 'Qualifying even an allowed function with pg_catalog',
    sql: 'select pg_catalog.lower(path) from files',
    stop: policy('pg_catalog.lower'),
  },

  // Server functions that sleep, read files, lock or open connections.
  { tries: 'Sleeping with pg_sleep', sql: 'select pg_sleep(10)', stop: policy('pg_sleep') },
  {
    tries: 'Reading a server file with pg_read_file',
    sql: "select pg_read_file('/etc/passwd')",
    stop: policy('pg_read_file'),
  },
  {
    tries: 'Listing a server directory with pg_ls_dir',
    sql: "select pg_ls_dir('.')",
    stop: policy('pg_ls_dir'),
  },
  {
    tries: 'Importing a server file with lo_import',
    sql: "select lo_import('/etc/passwd')",
    stop: policy('lo_import'),
  },
  { tries: 'Reading a large object with lo_get', sql: 'select lo_get(1)', stop: policy('lo_get') },
  {
    tries: 'Opening a connection with dblink',
    sql: "select * from dblink('host=127.0.0.1', 'select 1') as t(x int)",
    stop: policy('dblink'),
  },
  {
    tries: 'Taking an advisory lock',
    sql: 'select pg_advisory_lock(1)',
    stop: policy('pg_advisory_lock'),
  },
  {
    tries: 'Reading the transaction id with txid_current',
    sql: 'select txid_current()',
    stop: policy('txid_current'),
  },
  {
    tries: 'Reading the transaction id with pg_current_xact_id',
    sql: 'select pg_current_xact_id()',
    stop: policy('pg_current_xact_id'),
  },

  // Statements hidden in the text.
  { tries: 'Two statements', sql: 'select 1; select 2', stop: policy('more than one statement') },
  {
    tries: 'A second statement inside a block comment',
    sql: 'select 1 /* ; drop table files */',
    stop: inert([[1]]),
  },
  {
    tries: 'A second statement after a line comment',
    sql: 'select 1 -- ; drop table files',
    stop: inert([[1]]),
  },
  {
    tries: 'A second statement on the line after a line comment',
    sql: 'select 1 --\n; drop table files',
    stop: policy('more than one statement'),
  },
  {
    tries: 'A second statement inside dollar quotes',
    sql: 'select $$ ; drop table files $$',
    stop: inert([[' ; drop table files ']]),
  },
  {
    tries: 'A second statement after tagged dollar quotes',
    sql: 'select $x$ a $x$; drop table files',
    stop: policy('more than one statement'),
  },
  {
    tries: 'A DO block',
    sql: 'do $$ begin perform pg_sleep(1); end $$',
    stop: policy('DO'),
  },

  // Anything but a plain SELECT.
  {
    tries: 'SELECT ... FOR UPDATE',
    sql: 'select * from files for update',
    stop: policy('FOR UPDATE'),
  },
  {
    tries: 'SELECT ... FOR SHARE',
    sql: 'select * from files for share',
    stop: policy('FOR SHARE'),
  },
  {
    tries: 'A data-modifying CTE',
    sql: 'with d as (delete from files returning *) select * from d',
    stop: policy('DELETE'),
  },
  {
    tries: 'EXPLAIN ANALYZE',
    sql: 'explain analyze select * from files',
    stop: policy('EXPLAIN'),
  },
  { tries: 'SELECT INTO', sql: 'select * into stolen from files', stop: policy('INTO') },
  { tries: 'COPY', sql: 'copy files to stdout', stop: policy('COPY') },
  { tries: 'LOCK', sql: 'lock table files', stop: policy('LOCK') },
  { tries: 'SET ROLE', sql: 'set role postgres', stop: policy('SET') },
  { tries: 'RESET ROLE', sql: 'reset role', stop: policy('SET') },
  { tries: 'CREATE TABLE', sql: 'create table t (x int)', stop: policy('CREATE') },
  { tries: 'PREPARE', sql: 'prepare p as select 1', stop: policy('PREPARE') },
  { tries: 'EXECUTE', sql: 'execute p', stop: policy('EXECUTE') },
  { tries: 'LISTEN', sql: 'listen agent_changes', stop: policy('LISTEN') },
  { tries: 'NOTIFY', sql: "notify agent_changes, 'x'", stop: policy('NOTIFY') },

  // Casts that look the catalogue up, and system columns.
  {
    tries: 'A cast to regclass',
    sql: "select 'pg_authid'::regclass",
    stop: policy('::regclass'),
  },
  { tries: 'A cast to regproc', sql: "select 'pg_sleep'::regproc", stop: policy('::regproc') },
  { tries: 'A cast to oid', sql: 'select 1::oid', stop: policy('::oid') },
  {
    tries: 'A cast to regclass by way of text',
    sql: "select cast('pg_authid'::text as regclass)",
    stop: policy('::regclass'),
  },
  { tries: 'Reading the system column ctid', sql: 'select ctid from files', stop: policy('ctid') },
  { tries: 'Reading the system column xmin', sql: 'select xmin from files', stop: policy('xmin') },
];

const test = attackSuite('attacks on read-only SQL over the index: reaching past it', ATTACKS);

test.run();
