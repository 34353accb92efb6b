-- Hidden stays hidden, whatever the query (issue 32 §3). Migration 033 put the moderation
-- conditions (a suspended agent's public workspaces, hidden listings) into the plain scope views
-- over indexed_versions_public, where the planner is free to run an agent's filter before them:
-- `1/(case when fields->>'k' like 'a%' then 0 else 1 end) = 1` answered `division by zero` for
-- a right guess on a suspended agent's header. A condition in a plain view never holds a filter
-- back; what holds it back is the row not being there (migration 013).
--
-- So the public partition is split once more, by `withheld`: the rows moderation takes out of
-- everyone's reach live in indexed_versions_public_withheld, and the views read the rows every
-- agent may read from indexed_versions_public_shown alone. The agent's filters still join the
-- planner's search there (the GIN indexes serve them, as since 013), and no plan over that
-- partition can meet a withheld row. index_row_withheld() is the one place the rule is written:
-- the index writes each new row with it (storage/file-index.ts) and moderation moves the rows of
-- what it hides or shows again (storage/moderation.ts). Whatever moderation withholds later
-- (a hidden workspace, say) goes into that function, and nowhere else.
--
-- Every column of every view comes from a row of the shown partition (or of the caller's own
-- fenced rows): listings, agents and conventions are looked up per such row (a scalar or an
-- `offset 0` lateral subquery, into which the planner pushes nothing), never joined as tables
-- an agent's filter could be run over, so no filter meets a hidden listing's or a suspended
-- agent's row there either.

drop schema agent_index cascade;
create schema agent_index;

alter table indexed_versions add column withheld boolean not null default false;

-- Whether an indexed row of `workspace_id`/`path` is out of reach of everyone but the
-- workspace's members: the workspace is public and its owner is suspended, or the path is a
-- listing the operator hid. Takes a key-share lock on the owner's and the listing's rows, so a
-- save and a moderation act on the same agent or listing take turns: the later one sees the
-- other's outcome (moderation locks those rows for update before it moves index rows).
create function index_row_withheld(row_workspace uuid, row_path text, row_visibility text)
  returns boolean language plpgsql volatile as $$
begin
  if row_visibility <> 'public' then
    return false;
  end if;
  perform 1 from public.agents a join public.workspaces w on w.owner_agent_id = a.agent_id
    where w.workspace_id = row_workspace for key share of a;
  perform 1 from public.listings l where l.workspace_id = row_workspace and l.path = row_path
    for key share;
  return exists (select 1 from public.workspaces w join public.agents a
      on a.agent_id = w.owner_agent_id
      where w.workspace_id = row_workspace and a.suspended_at is not null)
    or exists (select 1 from public.listings l
      where l.workspace_id = row_workspace and l.path = row_path and l.hidden_at is not null);
end $$;

alter table indexed_versions detach partition indexed_versions_public;
alter table indexed_versions_public rename to indexed_versions_public_before_039;
-- A partitioned table's key holds every level's partition column.
alter table indexed_versions drop constraint indexed_versions_pkey;
alter table indexed_versions add primary key (workspace_id, path, version, visibility, withheld);

create table indexed_versions_public partition of indexed_versions for values in ('public')
  partition by list (withheld);
create table indexed_versions_public_shown partition of indexed_versions_public
  for values in (false);
create table indexed_versions_public_withheld partition of indexed_versions_public
  for values in (true);

-- Every stored column (whatever earlier migrations added), each row where the rule puts it.
do $$
declare
  copied text;
begin
  select string_agg(quote_ident(attname), ', ' order by attnum) into copied
  from pg_attribute
  where attrelid = 'public.indexed_versions_public_before_039'::regclass and attnum > 0
    and not attisdropped and attgenerated = '' and attname <> 'withheld';
  execute format('insert into indexed_versions (%1$s, withheld) select %1$s,
    index_row_withheld(workspace_id, path, visibility) from indexed_versions_public_before_039',
    copied);
end $$;
drop table indexed_versions_public_before_039;

-- Scope `public`: the rows every agent may read.
create view agent_index.file_versions_public as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id,
  (select a.name from public.agents a where a.agent_id = iv.author_id) as author_name,
  iv.saved_at, iv.visibility, iv.convention, iv.fields, iv.body, iv.search
from public.indexed_versions_public_shown iv;

create view agent_index.files_public as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id,
  (select a.name from public.agents a where a.agent_id = iv.author_id) as author_name,
  iv.saved_at, iv.visibility, iv.convention, iv.fields, iv.body, iv.search
from public.indexed_versions_public_shown iv
where iv.current;

-- Scope `store`: the files of the listings in the store (hidden ones are withheld).
create view agent_index.file_versions_store as
select * from agent_index.file_versions_public v
where exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
  and l.path = v.path);

create view agent_index.files_store as
select * from agent_index.files_public v
where exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
  and l.path = v.path);

-- Scope `own`: the caller's workspaces (owned and member) and the store. Its shared rows as in
-- scope `public`; its own private and withheld rows (a member reads a suspended owner's public
-- workspace, an author its hidden listing) only from the fenced CTE over the caller's
-- workspaces.
create view agent_index.file_versions_own as
with caller_fenced as materialized (
  select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, iv.saved_at,
    iv.visibility, iv.convention, iv.fields, iv.body, iv.search
  from public.indexed_versions iv
  where (iv.visibility = 'private' or iv.withheld)
    and iv.workspace_id = any (array(select m.workspace_id from public.workspace_members m
      where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
)
select v.* from agent_index.file_versions_public v
where v.workspace_id = any (array(select m.workspace_id from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
  or exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
    and l.path = v.path)
union all
select p.workspace_id, p.path, p.version, p.sha256, p.author_id,
  (select a.name from public.agents a where a.agent_id = p.author_id), p.saved_at,
  p.visibility, p.convention, p.fields, p.body, p.search
from caller_fenced p;

create view agent_index.files_own as
with caller_fenced as materialized (
  select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, iv.saved_at,
    iv.visibility, iv.convention, iv.fields, iv.body, iv.search
  from public.indexed_versions iv
  where iv.current and (iv.visibility = 'private' or iv.withheld)
    and iv.workspace_id = any (array(select m.workspace_id from public.workspace_members m
      where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
)
select v.* from agent_index.files_public v
where v.workspace_id = any (array(select m.workspace_id from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
  or exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
    and l.path = v.path)
union all
select p.workspace_id, p.path, p.version, p.sha256, p.author_id,
  (select a.name from public.agents a where a.agent_id = p.author_id), p.saved_at,
  p.visibility, p.convention, p.fields, p.body, p.search
from caller_fenced p;

-- The store: every shown listing's current version, in every scope. Driven by the shown rows;
-- the listing is looked up per row (`offset 0`: the planner pushes no filter into it).
create view agent_index.store as
select l.listing_id, l.kind, iv.fields ->> 'name' as name,
  iv.fields ->> 'description' as description, iv.fields ->> 'need' as need,
  iv.fields ->> 'can' as can, iv.convention,
  iv.dimensions,
  iv.author_id, (select a.name from public.agents a where a.agent_id = iv.author_id)
    as author_name,
  iv.workspace_id, iv.path, iv.version, iv.saved_at,
  coalesce(c.status = 'placed', false) as placed,
  case when c.status = 'placed' then c.placement end as placement,
  iv.fields ->> 'contact' as contact, iv.search
from public.indexed_versions_public_shown iv
cross join lateral (select k.listing_id, k.kind from public.listings k
  where k.workspace_id = iv.workspace_id and k.path = iv.path offset 0) l
left join public.conventions c on c.name = iv.convention
where iv.current;

-- axis_values: one row per axis value of a current file in reach (array values: one each), made
-- from the fields of the scope's current files.
create view agent_index.axis_values_public as
select ax.axis, v.value, f.convention, ax.field, f.workspace_id, f.path,
  (select l.listing_id from public.listings l where l.workspace_id = f.workspace_id
    and l.path = f.path) as listing_id
from agent_index.files_public f
left join public.conventions c on c.name = f.convention
join public.convention_axes ax on ax.convention = coalesce(c.name, '')
cross join lateral (
  select f.fields -> ax.field #>> '{}' as value
  where jsonb_typeof(f.fields -> ax.field) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(f.fields -> ax.field)
    when 'array' then f.fields -> ax.field else '[]'::jsonb end) e
) v;

create view agent_index.axis_values_store as
select ax.axis, v.value, f.convention, ax.field, f.workspace_id, f.path,
  (select l.listing_id from public.listings l where l.workspace_id = f.workspace_id
    and l.path = f.path) as listing_id
from agent_index.files_store f
left join public.conventions c on c.name = f.convention
join public.convention_axes ax on ax.convention = coalesce(c.name, '')
cross join lateral (
  select f.fields -> ax.field #>> '{}' as value
  where jsonb_typeof(f.fields -> ax.field) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(f.fields -> ax.field)
    when 'array' then f.fields -> ax.field else '[]'::jsonb end) e
) v;

create view agent_index.axis_values_own as
select ax.axis, v.value, f.convention, ax.field, f.workspace_id, f.path,
  (select l.listing_id from public.listings l where l.workspace_id = f.workspace_id
    and l.path = f.path) as listing_id
from agent_index.files_own f
left join public.conventions c on c.name = f.convention
join public.convention_axes ax on ax.convention = coalesce(c.name, '')
cross join lateral (
  select f.fields -> ax.field #>> '{}' as value
  where jsonb_typeof(f.fields -> ax.field) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(f.fields -> ax.field)
    when 'array' then f.fields -> ax.field else '[]'::jsonb end) e
) v;

-- The role agents' SQL runs as is granted these views at start (storage/index-scope.ts,
-- READER_ROLE_SETUP): roles belong to the whole cluster.
