-- What the index keeps of a version's YAML header counts against its author's quota (rule
-- `every_kept_byte`, actors/index/save-hook.ts). A header of 40 KB that aliases one large list
-- a hundred times expanded to 8.6 MB of fields, stored per version and counted nowhere; the
-- header reader now bounds the fields at 256 KiB, and each version's fields count from its save
-- until a delete lets go of the path.
--
-- `kept_bytes`: the bytes of the version's fields (as JSON) counted against its author; 0 once
-- given back. `index_bytes`: the part of an agent's `used_bytes` that is the index's.
alter table indexed_versions add column kept_bytes integer not null default 0;
alter table storage_usage add column index_bytes bigint not null default 0;

-- The versions already indexed whose bytes are kept count from now on.
update indexed_versions i set kept_bytes = octet_length(i.fields::text)
from file_versions v
where v.workspace_id = i.workspace_id and v.path = i.path and v.version = i.version
  and v.bytes_kept;

insert into storage_usage (agent_id, used_bytes, current_bytes, index_bytes)
select author_id, sum(kept_bytes), 0, sum(kept_bytes)
from indexed_versions where kept_bytes > 0
group by author_id
on conflict (agent_id) do update
  set used_bytes = storage_usage.used_bytes + excluded.used_bytes,
    index_bytes = excluded.index_bytes;
