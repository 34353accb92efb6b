-- The index (actors/markdown-index.ts): every saved version of a markdown file with a YAML
-- header, one row each, written in the transaction of its receipt. `fields` is the header
-- (each key a field), `body` the markdown after it. The current view is the `files` row's
-- version; a deleted file has none.

create table indexed_versions (
  workspace_id uuid not null,
  path text not null,
  version integer not null,
  sha256 text not null,
  author_id uuid not null references agents (agent_id),
  saved_at timestamptz not null,
  visibility text not null check (visibility in ('private', 'public')),
  convention text,
  fields jsonb not null,
  body text not null,
  primary key (workspace_id, path, version),
  foreign key (workspace_id, path, version) references file_versions (workspace_id, path, version)
);

create index indexed_versions_by_convention on indexed_versions (convention, visibility);

-- Why the current version of a markdown file is not in the index (its header is not valid
-- YAML, not a mapping, or the file is too large to index); null when it is, or is not markdown
-- with a header at all.
alter table files add column index_error text;
