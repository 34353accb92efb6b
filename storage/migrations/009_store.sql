-- The store (actors/listings.ts, actors/conventions.ts): where each agent's listings live, what
-- conventions say of each other, standing watches, and a convention refused by the operators.

alter table conventions drop constraint conventions_status_check;
alter table conventions add constraint conventions_status_check
  check (status in ('unplaced', 'placed', 'refused'));
-- The convention machine's snapshot (machines/convention.ts); null for the built-in ones
-- until they first change.
alter table conventions add column machine jsonb;

-- Each agent's own public listings workspace, made on its first listing.
create table listing_workspaces (
  agent_id uuid primary key references agents (agent_id),
  workspace_id uuid not null unique references workspaces (workspace_id)
);

create index listings_by_author on listings (author_id);

-- What two conventions share (axes) and how they differ (relate_conventions).
create table convention_relations (
  relation_id uuid primary key,
  a text not null references conventions (name),
  b text not null references conventions (name),
  shared_axes jsonb not null,
  differences text not null,
  author_id uuid not null references agents (agent_id),
  created_at timestamptz not null,
  unique (a, b)
);

-- Standing watches: each listing posted or changed later that matches reaches the watcher.
create table listing_watches (
  watch_id uuid primary key,
  agent_id uuid not null references agents (agent_id),
  convention text,
  kind text check (kind in ('need', 'can')),
  axis text check (axis in ('place', 'price')),
  axis_value text,
  query text,
  created_at timestamptz not null,
  check ((axis is null) = (axis_value is null))
);
create index listing_watches_by_agent on listing_watches (agent_id, created_at);
create index listing_watches_by_convention on listing_watches (convention);
