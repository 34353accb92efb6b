-- What Azure tools send, kept as they sent it (issue 35 §2).
--
-- 1. Names as saved: `files.path` stays the NFC key that every lookup, conflict and uniqueness
--    check compares (two spellings of one name are one file); `path_as_saved` is the spelling
--    the current version was saved under (`u` + U+0308 stays NFD), which listings show. Null
--    when it is the key itself, as for every row saved before this column. Versions, receipts
--    and changes keep naming the key.
-- 2. Content settings: the `x-ms-blob-content-type`, `-encoding`, `-language`, `-disposition`
--    and `-cache-control` a save set, per version (null for none: the type is then inferred from
--    the path). Kept beside the bytes like the metadata (migration 019), and counted with it:
--    `metadata_bytes` (migration 042) now counts the JSON written of both, and both are let go
--    together.
alter table files add column path_as_saved text;
alter table file_versions add column content_settings jsonb;
