-- Deals (actors/deals.ts): a deal file's record, named by {workspace_id, path}. Every
-- agreement, delivery and rating keeps its signed receipt (chained in its workspace, after the
-- workspace's last receipt whatever it recorded).

create table deals (
  deal_id uuid primary key,
  workspace_id uuid not null references workspaces (workspace_id),
  path text not null,
  status text not null check (status in ('draft', 'agreed', 'delivered', 'closed')),
  machine jsonb not null,
  version integer not null default 1,
  created_at timestamptz not null,
  unique (workspace_id, path)
);

-- The parties of what was agreed (the last complete round), for reputation.
create table deal_parties (
  deal_id uuid not null references deals (deal_id),
  agent_id uuid not null references agents (agent_id),
  agreed_at timestamptz not null,
  primary key (deal_id, agent_id)
);
create index deal_parties_by_agent on deal_parties (agent_id);

create table deal_agreements (
  agreement_id uuid primary key,
  deal_id uuid not null references deals (deal_id),
  agent_id uuid not null references agents (agent_id),
  version integer not null,
  sha256 text not null,
  parties uuid[] not null,
  agreed_at timestamptz not null,
  receipt jsonb not null,
  unique (deal_id, version, agent_id)
);

create table deal_deliveries (
  delivery_id uuid primary key,
  deal_id uuid not null references deals (deal_id),
  agent_id uuid not null references agents (agent_id),
  note text,
  files jsonb not null,
  delivered_at timestamptz not null,
  receipt jsonb not null
);
create index deal_deliveries_by_deal on deal_deliveries (deal_id, delivered_at);

create table deal_ratings (
  rating_id uuid primary key,
  deal_id uuid not null references deals (deal_id),
  rater_id uuid not null references agents (agent_id),
  ratee_id uuid not null references agents (agent_id),
  delivered_can boolean not null,
  accepted_on_need boolean not null,
  score integer check (score between 1 and 5),
  comment text,
  payment_backed boolean not null,
  rated_at timestamptz not null,
  superseded_by uuid references deal_ratings (rating_id) deferrable initially deferred,
  receipt jsonb not null
);
create index deal_ratings_by_deal on deal_ratings (deal_id, rated_at);
create index deal_ratings_by_ratee on deal_ratings (ratee_id) where superseded_by is null;
-- One standing rating per rater, ratee and deal; corrections supersede it.
create unique index deal_ratings_standing on deal_ratings (deal_id, rater_id, ratee_id)
  where superseded_by is null;
