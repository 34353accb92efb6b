/**
 * The relations an agent's SQL may name, bound to what its caller may read: each is a CTE over
 * the service's own tables (named with their schema, so that the agent's unqualified names can
 * only ever mean these CTEs), filtered by the caller's scope. `$agent` is the caller's id.
 */
export type IndexScope = 'own' | 'public' | 'store';

const FILE_COLUMNS = `iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id,
  a.name as author_name, iv.saved_at, w.visibility, iv.convention, iv.fields, iv.body`;

function reach(scope: IndexScope, agent: string): string {
  if (scope === 'public') return `w.visibility = 'public'`;
  if (scope === 'store') return 'false';
  return `iv.workspace_id in (select m.workspace_id from public.workspace_members m
    where m.agent_id = ${agent}::uuid)`;
}

/** `with files as (...), ... <select>`: the agent's checked query inside its scope. */
export function scopedQuery(text: string, scope: IndexScope, agentParam: number, cap: number) {
  const agent = `$${agentParam}`;
  const from = `from public.indexed_versions iv
    join public.workspaces w on w.workspace_id = iv.workspace_id
    join public.agents a on a.agent_id = iv.author_id`;
  // The caller's id is bound in every scope (the statement's parameters are counted from it).
  return `with caller as (select ${agent}::uuid as agent_id), files as (
    select ${FILE_COLUMNS} ${from}
    join public.files f on f.workspace_id = iv.workspace_id and f.path = iv.path
      and f.version = iv.version
    where ${reach(scope, agent)}
  ), file_versions as (
    select ${FILE_COLUMNS} ${from} where ${reach(scope, agent)}
  ), store as (
    select null::uuid as listing_id, null::text as kind, null::text as name,
      null::text as description, null::text as need, null::text as can,
      null::text as convention, null::jsonb as dimensions, null::uuid as author_id,
      null::text as author_name, null::uuid as workspace_id, null::int4 as version,
      null::timestamptz as saved_at, null::bool as placed, null::text[] as placement,
      null::text as contact
    where false
  ), axis_values as (
    select null::text as axis, null::text as value, null::text as convention,
      null::text as field, null::uuid as workspace_id, null::text as path,
      null::uuid as listing_id
    where false
  )
  select * from (${text}) as agent_query limit ${cap + 1}`;
}
