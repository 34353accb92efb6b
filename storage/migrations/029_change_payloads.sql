-- A change told to many agents at once (a listing reaching its 1,000 watchers, a message to a
-- workspace's members) keeps its actor and data once, in change_payloads; each agent's row then
-- holds its number, id, type and workspace, and points at the payload. A change told to one agent
-- keeps them inline as before. storage/kernel/changes.ts reads either.
create table change_payloads (
  payload_id uuid primary key,
  actor jsonb,
  data jsonb not null
);

alter table changes alter column data drop not null;
alter table changes add column payload_id uuid references change_payloads (payload_id);
alter table changes add constraint changes_data_or_payload
  check ((data is null) <> (payload_id is null));
