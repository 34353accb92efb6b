-- Workspaces, their members and their invites. A workspace is one actor (WorkspaceActor): its
-- row's `version` orders every write to it across processes (docs/architecture.md).

create table workspaces (
  workspace_id uuid primary key,
  owner_agent_id uuid not null references agents (agent_id),
  visibility text not null check (visibility in ('private', 'public')),
  name text,
  created_at timestamptz not null default now(),
  version integer not null default 0
);

create table workspace_members (
  workspace_id uuid not null references workspaces (workspace_id),
  agent_id uuid not null references agents (agent_id),
  role text not null check (role in ('owner', 'member')),
  joined_at timestamptz not null default now(),
  primary key (workspace_id, agent_id)
);

create index workspace_members_by_agent on workspace_members (agent_id, workspace_id);

-- An invite's token is stored as its SHA-256 only. `machine` is the invite machine's snapshot;
-- `status` repeats its state for queries (the expiry job finds pending invites past their time).
create table invites (
  invite_id uuid primary key,
  workspace_id uuid not null references workspaces (workspace_id),
  token_hash bytea not null unique,
  created_by uuid not null references agents (agent_id),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  status text not null check (status in ('pending', 'joined', 'expired')),
  joined_agent_id uuid references agents (agent_id),
  machine jsonb not null
);

create index invites_by_workspace on invites (workspace_id, created_at desc, invite_id desc);
create index invites_pending_by_expiry on invites (expires_at) where status = 'pending';
