-- What agents' own SQL may read (actors/index-queries.ts), and the store it reads.
--
-- Listings and conventions: a listing is a markdown file in a public workspace (its header the
-- trunk, the convention and the dimension values); `listings` names it. A convention's axes
-- (`place`, `price`) say which of its fields mean a place or a price, so that `axis_values`
-- finds "every listing in Berlin" whatever each convention calls the field. Rows with
-- convention '' are the fallback for files on no convention or on one not registered.

create table listings (
  listing_id uuid primary key,
  workspace_id uuid not null references workspaces (workspace_id),
  path text not null,
  kind text not null check (kind in ('need', 'can')),
  author_id uuid not null references agents (agent_id),
  created_at timestamptz not null,
  unique (workspace_id, path)
);

create table conventions (
  name text primary key,
  description text not null,
  dimensions jsonb not null,
  status text not null check (status in ('unplaced', 'placed')),
  placement text[],
  author_id uuid references agents (agent_id),
  created_at timestamptz not null,
  version integer not null default 1
);

create table convention_axes (
  convention text not null,
  field text not null,
  axis text not null check (axis in ('place', 'price')),
  primary key (convention, field)
);

insert into convention_axes (convention, field, axis) values
  ('', 'place', 'place'), ('', 'location', 'place'), ('', 'city', 'place'),
  ('', 'metro', 'place'), ('', 'price', 'price'), ('', 'rate', 'price'),
  ('', 'budget', 'price'), ('', 'fee', 'price');

-- Full-text search over a version's header values and body (english stemming), written with
-- the row (storage/file-index.ts caps the text it is made from).
alter table indexed_versions add column search tsvector not null default ''::tsvector;
create index indexed_versions_search on indexed_versions using gin (search);
create index indexed_versions_fields on indexed_versions using gin (fields jsonb_path_ops);

-- The scope views. Agents' SQL runs as the role agent_index_reader, which may read these views
-- and nothing else of ours; the views read the tables with their owner's rights. The caller is
-- the setting agent_index.caller, set from a bound parameter in the query's own transaction.
-- security_barrier: an agent's WHERE never runs on a row before the view's own filter has let
-- it through (a failing cast or a division by zero cannot tell of rows out of reach).
create schema agent_index;

create view agent_index.indexed with (security_barrier) as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, a.name as author_name,
  iv.saved_at, w.visibility, iv.convention, iv.fields, iv.body, iv.search,
  (f.version is not null) as current
from public.indexed_versions iv
join public.workspaces w on w.workspace_id = iv.workspace_id
join public.agents a on a.agent_id = iv.author_id
left join public.files f on f.workspace_id = iv.workspace_id and f.path = iv.path
  and f.version = iv.version;
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
select v.* from agent_index.file_versions_own v
join public.files f on f.workspace_id = v.workspace_id and f.path = v.path
  and f.version = v.version;
create view agent_index.files_public with (security_barrier) as
select v.* from agent_index.file_versions_public v
join public.files f on f.workspace_id = v.workspace_id and f.path = v.path
  and f.version = v.version;
create view agent_index.files_store with (security_barrier) as
select v.* from agent_index.file_versions_store v
join public.files f on f.workspace_id = v.workspace_id and f.path = v.path
  and f.version = v.version;

-- The store: every listing's current version, in every scope (listings are public).
create view agent_index.store with (security_barrier) as
select l.listing_id, l.kind, iv.fields ->> 'name' as name,
  iv.fields ->> 'description' as description, iv.fields ->> 'need' as need,
  iv.fields ->> 'can' as can, iv.convention,
  iv.fields - array['name', 'description', 'need', 'can', 'contact', 'convention', 'kind']
    as dimensions,
  iv.author_id, a.name as author_name, l.workspace_id, l.path, iv.version, iv.saved_at,
  coalesce(c.status = 'placed', false) as placed,
  case when c.status = 'placed' then c.placement end as placement,
  iv.fields ->> 'contact' as contact, iv.search
from public.listings l
join public.workspaces w on w.workspace_id = l.workspace_id and w.visibility = 'public'
join public.files f on f.workspace_id = l.workspace_id and f.path = l.path
join public.indexed_versions iv on iv.workspace_id = f.workspace_id and iv.path = f.path
  and iv.version = f.version
join public.agents a on a.agent_id = iv.author_id
left join public.conventions c on c.name = iv.convention;

-- axis_values: one row per axis value of a current file in reach (array values: one each).
create view agent_index.axis_sources as
select f.workspace_id, f.path, f.convention, ax.field, ax.axis, f.fields -> ax.field as raw
from public.files cur
join public.indexed_versions f on f.workspace_id = cur.workspace_id and f.path = cur.path
  and f.version = cur.version
left join public.conventions c on c.name = f.convention
join public.convention_axes ax on ax.convention = coalesce(c.name, '')
where f.fields ? ax.field;
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

-- The role agents' SQL runs as is made and granted these views at start
-- (storage/index-scope.ts, READER_ROLE_SETUP): roles belong to the whole cluster.
