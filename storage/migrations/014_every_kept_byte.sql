-- The quota rule `every_kept_byte` (actors/file-versions.ts, /protocol "Files"): every byte the
-- service keeps for an agent counts against its quota, or is not kept.
--
-- Which versions keep their bytes: the current version of every live file, and the older
-- versions of a file whose version the index read (markdown with a valid YAML header, within
-- the index's byte cap), while the file lives. A version the index did not read keeps its bytes
-- only while it is current; a delete lets go of every version of the path. Each kept version
-- counts against the agent that saved it.

-- `used_bytes` is now every kept version's bytes; `current_bytes` the part that is current files.
alter table storage_usage add column current_bytes bigint not null default 0;

-- Versions kept under the old rule that the new one does not keep: versions of markdown the
-- index did not read that are no longer current, and every version saved before a delete.
update file_versions v set bytes_kept = false
where v.bytes_kept and v.action = 'save'
  and (
    exists (select 1 from file_versions d
            where d.workspace_id = v.workspace_id and d.path = v.path
              and d.action = 'delete' and d.version > v.version)
    or (
      not exists (select 1 from files f
                  where f.workspace_id = v.workspace_id and f.path = v.path
                    and f.version = v.version)
      and not exists (select 1 from indexed_versions i
                      where i.workspace_id = v.workspace_id and i.path = v.path
                        and i.version = v.version)
    )
  );

-- Every agent's use, counted again from what is kept.
update storage_usage set used_bytes = 0, current_bytes = 0;
insert into storage_usage (agent_id, used_bytes, current_bytes)
select v.agent_id, sum(v.size), coalesce(sum(v.size) filter (where f.path is not null), 0)
from file_versions v
left join files f
  on f.workspace_id = v.workspace_id and f.path = v.path and f.version = v.version
where v.bytes_kept and v.action = 'save'
group by v.agent_id
on conflict (agent_id) do update
  set used_bytes = excluded.used_bytes, current_bytes = excluded.current_bytes;

-- Room held by uploads in progress (actors/upload-reservations.ts), so that uploads at once,
-- in any process, never take more than the quota between them: taken before a byte is
-- streamed (the declared length, or growing as bytes arrive), given back when the upload is
-- saved or refused. `sha256` names the upload's blob once its bytes are hashed and before they
-- are visible in the blob store: the collector and the deletion of let-go bytes spare it.
-- A reservation left by a process that died lapses at `expires_at`.
create table upload_reservations (
  reservation_id uuid primary key,
  agent_id uuid not null references agents (agent_id),
  bytes bigint not null,
  sha256 text,
  expires_at timestamptz not null
);
create index upload_reservations_by_agent on upload_reservations (agent_id);
create index upload_reservations_by_sha256 on upload_reservations (sha256) where sha256 is not null;
create index upload_reservations_by_expiry on upload_reservations (expires_at);

