-- What Azure Blob clients keep beside a file's bytes, per version (the "Storage links" section
-- of /protocol): `content_md5`, the MD5 of the version's bytes in base64 (computed while the
-- bytes stream in, for every save; null for deletes and for versions saved before this column),
-- served as `Content-MD5`; and `metadata`, the `x-ms-meta-*` pairs sent with the save (names
-- as sent, at most 8 KiB of names and values together), or null for none.
alter table file_versions add column content_md5 text;
alter table file_versions add column metadata jsonb;
