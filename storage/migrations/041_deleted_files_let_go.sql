-- What is kept of a deleted file is what every quota counts (rule `every_kept_byte`, issue 32
-- §2). Migration 038 gave back the bytes of a deleted file's header fields, but the index kept
-- them, its body and its search words (up to 1.25 MiB a version), counted nowhere: a save and
-- delete loop grew the database by that much a cycle. A delete now empties them in the
-- statement that gives the bytes back (storage/file-index.ts letGoIndexedVersions); the
-- versions deleted before this migration are emptied here. Each row keeps its key, author, time
-- and convention: `file_versions` still lists the history.
update indexed_versions i set fields = '{}'::jsonb, body = '', search = ''::tsvector
from file_versions v
where v.workspace_id = i.workspace_id and v.path = i.path and v.version = i.version
  and not v.bytes_kept and i.kept_bytes = 0
  and (i.fields <> '{}'::jsonb or i.body <> '' or i.search <> ''::tsvector);

-- The `x-ms-meta-*` pairs kept beside a version (up to 8 KiB, counted nowhere) go with its
-- bytes (storage/files.ts, a save's let-go and a delete).
update file_versions set metadata = null where not bytes_kept and metadata is not null;
