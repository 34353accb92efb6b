-- The blob store this database was first used with (issue 24, "a misconfiguration is refused"):
-- the sha256 of an identity blob written into that store at first start. A process whose blob
-- store lacks that blob is pointed at another store (another machine's DATA_DIR, another bucket)
-- and refuses to start, instead of serving files that answer 404 elsewhere.
create table blob_store_identity (
  only_row boolean primary key default true check (only_row),
  sha256 text not null,
  created_at timestamptz not null default now()
);
