-- The scope views again (first made in 008), faster: a filter an agent writes on `search`
-- (full-text), on a header field (`fields->>'city'`) or on `dimensions` can now reach the
-- indexes under the security barrier. `dimensions` is a stored column (the header without the
-- trunk), so that reading it needs only `->>`, which the service marks LEAKPROOF at start
-- where it may (storage/index-scope.ts, LEAKPROOF_SETUP); `jsonb - text[]` can fail on a
-- scalar, so it stays where the barrier keeps it: in the column's definition. `current` marks
-- the version each file's row names (kept by actors/file-versions.ts in the save's and the
-- delete's transaction), so that the current views join no `files` table at all.

drop schema agent_index cascade;
create schema agent_index;

alter table indexed_versions add column current boolean not null default false;
update indexed_versions iv set current = true from files f
  where f.workspace_id = iv.workspace_id and f.path = iv.path and f.version = iv.version;
create index indexed_versions_current on indexed_versions (workspace_id, path) where current;
create index indexed_versions_current_convention on indexed_versions (convention) where current;
-- The store's pages, newest first (storage/store.ts).
create index indexed_versions_current_recent on indexed_versions (saved_at desc, workspace_id, path)
  where current;

alter table indexed_versions add column dimensions jsonb generated always as (
  fields - array['name', 'description', 'need', 'can', 'contact', 'convention', 'kind']
) stored;
-- "Listings on a convention with a dimension value": `dimensions @> '{"location": "Berlin"}'`.
create index indexed_versions_dimensions on indexed_versions using gin (dimensions jsonb_path_ops)
  where current;


create view agent_index.indexed with (security_barrier) as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, a.name as author_name,
  iv.saved_at, w.visibility, iv.convention, iv.fields, iv.body, iv.search, iv.current
from public.indexed_versions iv
join public.workspaces w on w.workspace_id = iv.workspace_id
join public.agents a on a.agent_id = iv.author_id;
revoke all on agent_index.indexed from public;

-- Scope `own`: the caller's workspaces (owned and member) and the store.
create view agent_index.file_versions_own with (security_barrier) as
select workspace_id, path, version, sha256, author_id, author_name, saved_at, visibility,
  convention, fields, body, search
from agent_index.indexed i
where i.workspace_id in (
    select m.workspace_id from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid)
  or (i.visibility = 'public' and exists (
    select 1 from public.listings l where l.workspace_id = i.workspace_id and l.path = i.path));

-- Scope `public`: every public workspace.
create view agent_index.file_versions_public with (security_barrier) as
select workspace_id, path, version, sha256, author_id, author_name, saved_at, visibility,
  convention, fields, body, search
from agent_index.indexed i
where i.visibility = 'public';

-- Scope `store`: the listings' files.
create view agent_index.file_versions_store with (security_barrier) as
select workspace_id, path, version, sha256, author_id, author_name, saved_at, visibility,
  convention, fields, body, search
from agent_index.indexed i
where i.visibility = 'public' and exists (
  select 1 from public.listings l where l.workspace_id = i.workspace_id and l.path = i.path);

create view agent_index.files_own with (security_barrier) as
select workspace_id, path, version, sha256, author_id, author_name, saved_at, visibility,
  convention, fields, body, search
from agent_index.indexed i
where i.current and (i.workspace_id in (
    select m.workspace_id from public.workspace_members m
    where m.agent_id = nullif(current_setting('agent_index.caller', true), '')::uuid)
  or (i.visibility = 'public' and exists (
    select 1 from public.listings l where l.workspace_id = i.workspace_id and l.path = i.path)));
create view agent_index.files_public with (security_barrier) as
select workspace_id, path, version, sha256, author_id, author_name, saved_at, visibility,
  convention, fields, body, search
from agent_index.indexed i
where i.current and i.visibility = 'public';
create view agent_index.files_store with (security_barrier) as
select workspace_id, path, version, sha256, author_id, author_name, saved_at, visibility,
  convention, fields, body, search
from agent_index.indexed i
where i.current and i.visibility = 'public' and exists (
  select 1 from public.listings l where l.workspace_id = i.workspace_id and l.path = i.path);

-- The store: every listing's current version, in every scope (listings are public).
create view agent_index.store with (security_barrier) as
select l.listing_id, l.kind, iv.fields ->> 'name' as name,
  iv.fields ->> 'description' as description, iv.fields ->> 'need' as need,
  iv.fields ->> 'can' as can, iv.convention,
  iv.dimensions,
  iv.author_id, a.name as author_name, l.workspace_id, l.path, iv.version, iv.saved_at,
  coalesce(c.status = 'placed', false) as placed,
  case when c.status = 'placed' then c.placement end as placement,
  iv.fields ->> 'contact' as contact, iv.search
from public.listings l
join public.workspaces w on w.workspace_id = l.workspace_id and w.visibility = 'public'
join public.indexed_versions iv on iv.workspace_id = l.workspace_id and iv.path = l.path
  and iv.current
join public.agents a on a.agent_id = iv.author_id
left join public.conventions c on c.name = iv.convention;

-- axis_values: one row per axis value of a current file in reach (array values: one each).
create view agent_index.axis_sources as
select f.workspace_id, f.path, f.convention, ax.field, ax.axis, f.fields -> ax.field as raw
from public.indexed_versions f
left join public.conventions c on c.name = f.convention
join public.convention_axes ax on ax.convention = coalesce(c.name, '')
where f.current and f.fields ? ax.field;
revoke all on agent_index.axis_sources from public;

create view agent_index.axis_values_own with (security_barrier) as
select s.axis, v.value, s.convention, s.field, s.workspace_id, s.path, l.listing_id
from agent_index.axis_sources s
join agent_index.files_own r on r.workspace_id = s.workspace_id and r.path = s.path
left join public.listings l on l.workspace_id = s.workspace_id and l.path = s.path
cross join lateral (
  select s.raw #>> '{}' as value where jsonb_typeof(s.raw) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(s.raw) when 'array' then s.raw
    else '[]'::jsonb end) e
) v;
create view agent_index.axis_values_public with (security_barrier) as
select s.axis, v.value, s.convention, s.field, s.workspace_id, s.path, l.listing_id
from agent_index.axis_sources s
join agent_index.files_public r on r.workspace_id = s.workspace_id and r.path = s.path
left join public.listings l on l.workspace_id = s.workspace_id and l.path = s.path
cross join lateral (
  select s.raw #>> '{}' as value where jsonb_typeof(s.raw) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(s.raw) when 'array' then s.raw
    else '[]'::jsonb end) e
) v;
create view agent_index.axis_values_store with (security_barrier) as
select s.axis, v.value, s.convention, s.field, s.workspace_id, s.path, l.listing_id
from agent_index.axis_sources s
join public.listings l on l.workspace_id = s.workspace_id and l.path = s.path
join public.workspaces w on w.workspace_id = s.workspace_id and w.visibility = 'public'
cross join lateral (
  select s.raw #>> '{}' as value where jsonb_typeof(s.raw) in ('string', 'number')
  union all
  select e from jsonb_array_elements_text(case jsonb_typeof(s.raw) when 'array' then s.raw
    else '[]'::jsonb end) e
) v;
