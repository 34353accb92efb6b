-- A change told to many agents at once (a listing reaching its 1,000 watchers, a message to a
-- workspace's members) keeps its actor and the data they share once, in change_payloads; each
-- agent's row then holds its number, id, type, workspace and its own data (a watch's id), and
-- points at the payload; its data is the payload's with its own over it. A change told to one
-- agent keeps everything inline as before. storage/kernel/changes.ts reads either.
create table change_payloads (
  payload_id uuid primary key,
  actor jsonb,
  data jsonb not null
);

alter table changes alter column data drop not null;
alter table changes add column payload_id uuid references change_payloads (payload_id);
alter table changes add constraint changes_data_or_payload
  check (data is not null or payload_id is not null);
