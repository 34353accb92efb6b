-- The scope views again (008, 011), so that no filter an agent writes is ever evaluated on a row
-- out of its reach: not as a WHERE below a security barrier, not as an index search over every
-- workspace's rows (whose time told whether a word was in another agent's private file).
--
-- Until now the views were security barriers, and the service marked ts_match_vq and the jsonb
-- field functions LEAKPROOF so that the planner could use the GIN indexes beneath the barrier;
-- the planner then ran those filters on hidden rows first. Now the data a filter may meet is
-- cut by who may read it before any filter is planned:
--
-- * indexed_versions is partitioned by visibility. A public workspace's files are readable by
--   every agent (scope `public`), so a filter that meets any of them learns nothing hidden: the
--   views over indexed_versions_public are plain views, the agent's WHERE joins the planner's
--   search, and the GIN indexes on `search`, `fields` and `dimensions` serve it. No private row
--   is in that partition, so no plan over it can touch one. (A workspace's visibility never
--   changes today; were it ever to, the update moves its rows between the partitions.)
-- * The caller's own private files (scope `own`) come from indexed_versions_private through a
--   MATERIALIZED CTE restricted to the caller's workspaces (an array of them, the index
--   condition): the planner pushes nothing into it, so the agent's filter runs on its output
--   only, whatever the filter's functions are marked.
--
-- The LEAKPROOF marks are taken back at start (actors/index-setup.ts): they are needed no more.

drop schema agent_index cascade;
create schema agent_index;

alter table indexed_versions rename to indexed_versions_unpartitioned;
alter table indexed_versions_unpartitioned rename constraint indexed_versions_pkey
  to indexed_versions_unpartitioned_pkey;
alter index indexed_versions_by_convention rename to indexed_versions_unpartitioned_by_convention;
drop index indexed_versions_search;
drop index indexed_versions_fields;
drop index indexed_versions_current;
drop index indexed_versions_current_convention;
drop index indexed_versions_current_recent;
drop index indexed_versions_dimensions;

create table indexed_versions (
  workspace_id uuid not null,
  path text not null,
  version integer not null,
  sha256 text not null,
  author_id uuid not null references agents (agent_id),
  saved_at timestamptz not null,
  visibility text not null check (visibility in ('private', 'public')),
  convention text,
  fields jsonb not null,
  body text not null,
  search tsvector not null default ''::tsvector,
  current boolean not null default false,
  dimensions jsonb generated always as (
    fields - array['name', 'description', 'need', 'can', 'contact', 'convention', 'kind']
  ) stored,
  -- A partitioned table's key holds its partition column; visibility follows from the
  -- workspace, so (workspace_id, path, version) stays unique.
  primary key (workspace_id, path, version, visibility),
  foreign key (workspace_id, path, version) references file_versions (workspace_id, path, version)
) partition by list (visibility);
create table indexed_versions_public partition of indexed_versions for values in ('public');
create table indexed_versions_private partition of indexed_versions for values in ('private');

insert into indexed_versions (workspace_id, path, version, sha256, author_id, saved_at,
  visibility, convention, fields, body, search, current)
select workspace_id, path, version, sha256, author_id, saved_at, visibility, convention, fields,
  body, search, current
from indexed_versions_unpartitioned;
drop table indexed_versions_unpartitioned;

create index indexed_versions_by_convention on indexed_versions (convention, visibility);
create index indexed_versions_search on indexed_versions using gin (search);
create index indexed_versions_fields on indexed_versions using gin (fields jsonb_path_ops);
create index indexed_versions_current on indexed_versions (workspace_id, path) where current;
create index indexed_versions_current_convention on indexed_versions (convention) where current;
create index indexed_versions_current_recent on indexed_versions (saved_at desc, workspace_id, path)
  where current;
create index indexed_versions_dimensions on indexed_versions using gin (dimensions jsonb_path_ops)
  where current;

-- Scope `public`: every public workspace's files. Plain views: every row is public.
create view agent_index.file_versions_public as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, a.name as author_name,
  iv.saved_at, iv.visibility, iv.convention, iv.fields, iv.body, iv.search
from public.indexed_versions_public iv
join public.agents a on a.agent_id = iv.author_id;

create view agent_index.files_public as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, a.name as author_name,
  iv.saved_at, iv.visibility, iv.convention, iv.fields, iv.body, iv.search
from public.indexed_versions_public iv
join public.agents a on a.agent_id = iv.author_id
where iv.current;

-- Scope `store`: the listings' files (listings are public by definition).
create view agent_index.file_versions_store as
select * from agent_index.file_versions_public v
where exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
  and l.path = v.path);

create view agent_index.files_store as
select * from agent_index.files_public v
where exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
  and l.path = v.path);

-- Scope `own`: the caller's workspaces (owned and member) and the store. Its public rows as in
-- scope `public`; its private rows only from the fenced CTE over the caller's workspaces.
create view agent_index.file_versions_own as
with caller_private as materialized (
  select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, iv.saved_at,
    iv.visibility, iv.convention, iv.fields, iv.body, iv.search
  from public.indexed_versions_private iv
  where iv.workspace_id = any (array(select m.workspace_id from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
)
select v.* from agent_index.file_versions_public v
where v.workspace_id = any (array(select m.workspace_id from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
  or exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
    and l.path = v.path)
union all
select p.workspace_id, p.path, p.version, p.sha256, p.author_id, a.name, p.saved_at,
  p.visibility, p.convention, p.fields, p.body, p.search
from caller_private p
join public.agents a on a.agent_id = p.author_id;

create view agent_index.files_own as
with caller_private as materialized (
  select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, iv.saved_at,
    iv.visibility, iv.convention, iv.fields, iv.body, iv.search
  from public.indexed_versions_private iv
  where iv.current and iv.workspace_id = any (array(select m.workspace_id
    from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
)
select v.* from agent_index.files_public v
where v.workspace_id = any (array(select m.workspace_id from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid))
  or exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
    and l.path = v.path)
union all
select p.workspace_id, p.path, p.version, p.sha256, p.author_id, a.name, p.saved_at,
  p.visibility, p.convention, p.fields, p.body, p.search
from caller_private p
join public.agents a on a.agent_id = p.author_id;

-- The store: every listing's current version, in every scope (listings are public).
create view agent_index.store as
select l.listing_id, l.kind, iv.fields ->> 'name' as name,
  iv.fields ->> 'description' as description, iv.fields ->> 'need' as need,
  iv.fields ->> 'can' as can, iv.convention,
  iv.dimensions,
  iv.author_id, a.name as author_name, l.workspace_id, l.path, iv.version, iv.saved_at,
  coalesce(c.status = 'placed', false) as placed,
  case when c.status = 'placed' then c.placement end as placement,
  iv.fields ->> 'contact' as contact, iv.search
from public.listings l
join public.indexed_versions_public iv on iv.workspace_id = l.workspace_id and iv.path = l.path
  and iv.current
join public.agents a on a.agent_id = iv.author_id
left join public.conventions c on c.name = iv.convention;

-- axis_values: one row per axis value of a current file in reach (array values: one each), made
-- from the fields of the scope's current files.
create view agent_index.axis_values_public as
select ax.axis, v.value, f.convention, ax.field, f.workspace_id, f.path, l.listing_id
from agent_index.files_public f
left join public.conventions c on c.name = f.convention
join public.convention_axes ax on ax.convention = coalesce(c.name, '')
left join public.listings l on l.workspace_id = f.workspace_id and l.path = f.path
cross join lateral (
  select f.fields -> ax.field #>> '{}' as value
  where jsonb_typeof(f.fields -> ax.field) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(f.fields -> ax.field)
    when 'array' then f.fields -> ax.field else '[]'::jsonb end) e
) v;

create view agent_index.axis_values_store as
select ax.axis, v.value, f.convention, ax.field, f.workspace_id, f.path, l.listing_id
from public.listings l
join agent_index.files_public f on f.workspace_id = l.workspace_id and f.path = l.path
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
select ax.axis, v.value, f.convention, ax.field, f.workspace_id, f.path, l.listing_id
from agent_index.files_own f
left join public.conventions c on c.name = f.convention
join public.convention_axes ax on ax.convention = coalesce(c.name, '')
left join public.listings l on l.workspace_id = f.workspace_id and l.path = f.path
cross join lateral (
  select f.fields -> ax.field #>> '{}' as value
  where jsonb_typeof(f.fields -> ax.field) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(f.fields -> ax.field)
    when 'array' then f.fields -> ax.field else '[]'::jsonb end) e
) v;

-- The role agents' SQL runs as is granted these views at start (storage/index-scope.ts,
-- READER_ROLE_SETUP): roles belong to the whole cluster.
