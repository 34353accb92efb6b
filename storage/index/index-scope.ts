/**
 * The relations an agent's SQL may name, bound to what its caller may read. Each is a CTE over
 * one of the scope views of migrations/039_withheld_index_rows.sql (named with their schema, so
 * that the agent's unqualified names can only ever mean these CTEs); the views read the caller
 * from the setting `agent_index.caller`, which `bindScope` sets from a parameter.
 *
 * What must always hold: no view reads a row its caller may not read and then filters it out.
 * Rows out of everyone's reach are not in the tables the views scan (private rows in their own
 * partition, rows moderation withholds in theirs), and the caller's own such rows come only
 * through a MATERIALIZED CTE fenced to its workspaces; so an agent's filter, however the
 * planner orders it, never meets one (test/index/hidden-index-rows.test.ts probes every view).
 */
import type { Queryable } from '../driver.ts';
import { ADVISORY_LOCK } from '../locks.ts';

/** Every scope an agent's SQL may run in (query_index's `scope`). */
export const INDEX_SCOPES = ['own', 'public', 'store'] as const;
export type IndexScope = (typeof INDEX_SCOPES)[number];

/** The role agents' SQL runs as: it may read the scope views and nothing else of ours. */
export const INDEX_READER_ROLE = 'agent_index_reader';

/**
 * `with files as (...), ... <select>`: the agent's checked query inside its scope. NOT
 * MATERIALIZED: a relation the agent names twice is still planned with its filters (which the
 * views keep away from rows out of reach themselves), not read whole first.
 */
export function scopedQuery(text: string, scope: IndexScope, cap: number): string {
  return `with files as not materialized (select * from agent_index.files_${scope}),
  file_versions as not materialized (select * from agent_index.file_versions_${scope}),
  store as not materialized (select * from agent_index.store),
  axis_values as not materialized (select * from agent_index.axis_values_${scope})
  select * from (${text}) as agent_query limit ${cap + 1}`;
}

/**
 * The statement that readies a transaction for an agent's SQL: `search_path` emptied to
 * pg_catalog, full-text search in english, the caller bound (parameter $1) and, when the role
 * exists, the role switched to the reader's. Settings are local to the transaction.
 */
export function bindScope(withRole: boolean): string {
  return `select set_config('search_path', 'pg_catalog', true),
    set_config('default_text_search_config', 'pg_catalog.english', true),
    set_config('agent_index.caller', $1::text, true)${
      withRole ? `, set_config('role', '${INDEX_READER_ROLE}', true)` : ''
    }`;
}

/** Every view the reader role may read: the scope views, and nothing else of ours. */
export const SCOPE_VIEWS = [
  'files_own',
  'files_public',
  'files_store',
  'file_versions_own',
  'file_versions_public',
  'file_versions_store',
  'store',
  'axis_values_own',
  'axis_values_public',
  'axis_values_store',
].map((view) => `agent_index.${view}`);

/**
 * Makes the reader role where it is missing and grants it the scope views (and the service's
 * user the role). Run at every start, under an advisory lock (grants from two processes at once
 * collide); a database user without the right to make roles leaves it undone, with a notice.
 */
export const READER_ROLE_SETUP = `do $$
begin
  if not exists (select 1 from pg_roles where rolname = '${INDEX_READER_ROLE}') then
    begin
      create role ${INDEX_READER_ROLE} nologin;
    exception when duplicate_object or unique_violation or insufficient_privilege then
      raise notice '${INDEX_READER_ROLE} not created: %', sqlerrm;
    end;
  end if;
  if exists (select 1 from pg_roles where rolname = '${INDEX_READER_ROLE}') then
    grant usage on schema agent_index to ${INDEX_READER_ROLE};
    grant select on ${SCOPE_VIEWS.join(', ')} to ${INDEX_READER_ROLE};
    if not pg_has_role(current_user, '${INDEX_READER_ROLE}', 'member') then
      begin
        execute format('grant ${INDEX_READER_ROLE} to %I', current_user);
      exception when others then
        raise notice '${INDEX_READER_ROLE} not granted to %: %', current_user, sqlerrm;
      end;
    end if;
  end if;
end $$`;

/** Whether this database user may run agents' SQL as the reader role. */
export const READER_ROLE_USABLE = `select case when exists (select 1 from pg_roles
  where rolname = '${INDEX_READER_ROLE}') then pg_has_role(current_user, '${INDEX_READER_ROLE}',
  'member') else false end as usable`;

/**
 * PostgreSQL only: a login role of this database's own, a member of the reader role, that the
 * agents' pool connects as. SET ROLE can be undone by whoever holds the session; a session that
 * logged in as the reader has nothing to go back to. Its name is made from the database's
 * (roles belong to the whole cluster; each database keeps its own password).
 */
export const READER_LOGIN_NAME = `select 'agent_index_login_' || left(md5(current_database()), 12)
  as name`;

/** Makes (or re-passwords) the login role; `password` is hex, so it is safe in the text. */
export function readerLoginSetup(name: string, password: string): string {
  if (!/^agent_index_login_[0-9a-f]{12}$/.test(name) || !/^[0-9a-f]+$/.test(password)) {
    throw new Error('unexpected reader login name or password');
  }
  return `do $$
begin
  if not exists (select 1 from pg_roles where rolname = '${name}') then
    create role ${name} login inherit password '${password}';
  else
    alter role ${name} login inherit password '${password}';
  end if;
  grant ${INDEX_READER_ROLE} to ${name};
end $$`;
}

/**
 * Takes back the LEAKPROOF marks earlier versions of the service put on these built-in
 * functions (their default is NOT LEAKPROOF). With the marks the planner ran an agent's
 * full-text and header filters on rows its scope hides, and their time told what those rows
 * held; the scope views of migrations/013_index_scope_first.sql no longer need them. Only a
 * function still marked is altered (a catalog write per start otherwise); a database user that
 * may not alter them (not a superuser) cannot have marked them either.
 */
export const LEAKPROOF_UNDO = `do $$
declare
  marked regprocedure;
begin
  for marked in
    select p.oid::regprocedure from pg_catalog.pg_proc p
    where p.proleakproof and p.oid in (
      'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure,
      'pg_catalog.jsonb_object_field_text(jsonb, text)'::regprocedure,
      'pg_catalog.jsonb_object_field(jsonb, text)'::regprocedure,
      'pg_catalog.jsonb_contains(jsonb, jsonb)'::regprocedure)
  loop
    execute format('alter function %s not leakproof', marked);
  end loop;
end $$`;

/** Makes processes starting at once take turns setting up the reader role and its login. */
export async function lockIndexSetup(tx: Queryable): Promise<void> {
  await tx.query(`select pg_advisory_xact_lock(${ADVISORY_LOCK.indexSetup})`);
}
