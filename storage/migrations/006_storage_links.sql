-- Storage links (actors/storage-links.ts) and the blocks staged through them.

-- Secrets the service keeps for itself, made at first start and shared by every process on
-- one database. `storage_links`: the HMAC-SHA256 key that signs storage links. Anyone who can
-- read this row can forge a link for 10 minutes' use; rotating it (delete the row, restart
-- every process) voids every link issued.
create table service_secrets (
  name text primary key,
  secret bytea not null,
  created_at timestamptz not null default now()
);

-- Blocks an Azure client staged with Put Block and has not yet committed with Put Block List.
-- They are never visible as a file; their bytes count against the stager's quota while they
-- are staged, and they expire (the blocks.expire job removes them, their blobs are then
-- collected). Staging the same block id again replaces it, as in Azure.
create table staged_blocks (
  workspace_id uuid not null references workspaces (workspace_id),
  path text not null,
  agent_id uuid not null references agents (agent_id),
  block_id text not null,
  sha256 text not null,
  size bigint not null,
  staged_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (workspace_id, path, agent_id, block_id)
);

create index staged_blocks_by_agent on staged_blocks (agent_id);
create index staged_blocks_by_expiry on staged_blocks (expires_at);
create index staged_blocks_by_sha256 on staged_blocks (sha256);
create index file_versions_by_sha256 on file_versions (sha256) where bytes_kept;
