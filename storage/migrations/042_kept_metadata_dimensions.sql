-- The last two kinds of bytes kept and counted nowhere (rule `every_kept_byte`, issue 32 §2).
--
-- 1. The `x-ms-meta-*` metadata kept beside a version (migration 019; up to 8 KiB a version, on
--    a 10-byte file too) now counts with the version's bytes, against whoever saved it, until
--    the bytes are let go (storage/files.ts). `metadata_bytes` is what was counted (the JSON as
--    written), so what is given back is what was added, whatever jsonb makes of it.
-- 2. `indexed_versions.dimensions` is a stored copy of the fields less the trunk (migration
--    013): a version kept up to twice the 256 KiB of fields counted. `kept_bytes` now counts
--    both (storage/file-index.ts insertIndexedVersion); a delete empties both as before.
alter table file_versions add column metadata_bytes integer not null default 0;

update file_versions set metadata_bytes = octet_length(metadata::text)
where bytes_kept and metadata is not null;

-- Each agent's use grows by what it now counts (read before kept_bytes changes below). Rows
-- already let go (kept_bytes 0) keep `{}` in both columns: nothing to count.
insert into storage_usage (agent_id, used_bytes, current_bytes, index_bytes)
select agent_id, sum(index_bytes + metadata_bytes), 0, sum(index_bytes)
from (
  select author_id as agent_id, octet_length(dimensions::text)::int8 as index_bytes,
    0::int8 as metadata_bytes
  from indexed_versions where kept_bytes > 0
  union all
  select agent_id, 0, metadata_bytes from file_versions where metadata_bytes > 0
) counted
group by agent_id
on conflict (agent_id) do update
  set used_bytes = storage_usage.used_bytes + excluded.used_bytes,
    index_bytes = storage_usage.index_bytes + excluded.index_bytes;

update indexed_versions set kept_bytes = kept_bytes + octet_length(dimensions::text)
where kept_bytes > 0;
