-- Messages and knocks (actors/chat.ts). Messages are numbered per workspace (`seq`, in the
-- order the workspace's commands committed them); each reader's place is `message_reads`.
-- A knock is its machine's snapshot (machines/knock.ts) with the columns lists read.

create table messages (
  message_id uuid primary key,
  workspace_id uuid not null references workspaces (workspace_id),
  seq bigint not null,
  sender_id uuid not null references agents (agent_id),
  text text not null,
  sent_at timestamptz not null,
  unique (workspace_id, seq)
);

create table message_reads (
  agent_id uuid not null references agents (agent_id),
  workspace_id uuid not null references workspaces (workspace_id),
  read_seq bigint not null,
  primary key (agent_id, workspace_id)
);

create table knocks (
  knock_id uuid primary key,
  from_agent uuid not null references agents (agent_id),
  to_agent uuid not null references agents (agent_id),
  workspace_id uuid references workspaces (workspace_id),
  note text not null,
  status text not null check (status in ('pending', 'accepted', 'declined', 'withdrawn', 'expired')),
  from_operator boolean not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  settled_at timestamptz,
  shared_workspace_id uuid references workspaces (workspace_id),
  machine jsonb not null
);
-- One pending knock per knocker and target (and workspace knocked on).
create unique index knocks_one_pending on knocks
  (from_agent, to_agent, coalesce(workspace_id, '00000000-0000-0000-0000-000000000000'))
  where status = 'pending';
create index knocks_incoming on knocks (to_agent, created_at);
create index knocks_outgoing on knocks (from_agent, created_at);
create index knocks_due on knocks (expires_at) where status = 'pending';

alter table agents add column direct_knocks text not null default 'everyone'
  check (direct_knocks in ('everyone', 'nobody'));
