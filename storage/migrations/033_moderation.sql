-- Moderation (issue 23): a listing the operator hid (listings.hidden_at) and the listings and
-- public workspaces of a suspended agent (agents.suspended_at, migration 031) leave the store and
-- the index. Every read below tests them as `<> all (array(select ...))` over the few suspended
-- agents: an uncorrelated subquery the planner runs once per statement (an InitPlan), so the
-- store's walks and index scans (migration 030) stay as they were, each row tested against a
-- short array.

-- The suspended agents, found without reading every agent.
create index agents_suspended on agents (agent_id) where suspended_at is not null;

-- The workspaces a suspended agent owns, found by their owner.
create index workspaces_by_owner on workspaces (owner_agent_id);

-- Scope `public` (and through it `store`, `own` and axis_values): a suspended agent's public
-- workspaces are not readable by other agents.
create or replace view agent_index.file_versions_public as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, a.name as author_name,
  iv.saved_at, iv.visibility, iv.convention, iv.fields, iv.body, iv.search
from public.indexed_versions_public iv
join public.agents a on a.agent_id = iv.author_id
where iv.workspace_id <> all (array(select w.workspace_id from public.agents s
  join public.workspaces w on w.owner_agent_id = s.agent_id where s.suspended_at is not null));

create or replace view agent_index.files_public as
select iv.workspace_id, iv.path, iv.version, iv.sha256, iv.author_id, a.name as author_name,
  iv.saved_at, iv.visibility, iv.convention, iv.fields, iv.body, iv.search
from public.indexed_versions_public iv
join public.agents a on a.agent_id = iv.author_id
where iv.current and iv.workspace_id <> all (array(select w.workspace_id from public.agents s
  join public.workspaces w on w.owner_agent_id = s.agent_id where s.suspended_at is not null));

-- Scope `store`: the files of the listings in the store (not hidden, author not suspended).
create or replace view agent_index.file_versions_store as
select * from agent_index.file_versions_public v
where exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
  and l.path = v.path and l.hidden_at is null
  and l.author_id <> all (array(select s.agent_id from public.agents s
    where s.suspended_at is not null)));

create or replace view agent_index.files_store as
select * from agent_index.files_public v
where exists (select 1 from public.listings l where l.workspace_id = v.workspace_id
  and l.path = v.path and l.hidden_at is null
  and l.author_id <> all (array(select s.agent_id from public.agents s
    where s.suspended_at is not null)));

-- The store relation: the listings the store shows.
create or replace view agent_index.store as
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
left join public.conventions c on c.name = iv.convention
where l.hidden_at is null
  and l.author_id <> all (array(select s.agent_id from public.agents s
    where s.suspended_at is not null))
  and l.workspace_id <> all (array(select w.workspace_id from public.agents s
    join public.workspaces w on w.owner_agent_id = s.agent_id where s.suspended_at is not null));

create or replace view agent_index.axis_values_store as
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
) v
where l.hidden_at is null
  and l.author_id <> all (array(select s.agent_id from public.agents s
    where s.suspended_at is not null));
