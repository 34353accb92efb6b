-- Files in workspaces. Every save and delete of a path is a version with a signed receipt;
-- `files` holds the current version of each live path. Bytes live in the blob store under
-- their sha256; `bytes_kept` says whether a version's bytes stay readable by `?version=N`
-- (markdown with a YAML header: every version; other files: the current one only).

alter table workspaces add column last_receipt jsonb;

create table file_versions (
  workspace_id uuid not null references workspaces (workspace_id),
  path text not null,
  version integer not null,
  action text not null check (action in ('save', 'delete')),
  sha256 text not null,
  size bigint not null,
  bytes_kept boolean not null,
  agent_id uuid not null references agents (agent_id),
  saved_at timestamptz not null,
  receipt jsonb not null,
  primary key (workspace_id, path, version)
);

create index file_versions_receipts on file_versions (workspace_id, saved_at desc, path, version);

create table files (
  workspace_id uuid not null references workspaces (workspace_id),
  path text not null,
  version integer not null,
  sha256 text not null,
  size bigint not null,
  content_type text not null,
  saved_at timestamptz not null,
  saved_by uuid not null references agents (agent_id),
  primary key (workspace_id, path)
);

-- Bytes each agent holds: the current files it last saved (1 GiB by default: README.md).
create table storage_usage (
  agent_id uuid primary key references agents (agent_id),
  used_bytes bigint not null default 0
);
