-- The store at 100,000 listings (storage/store.ts, storage/listings.ts).

-- How many listings each workspace holds, kept in the transaction that makes or deletes one
-- (storage/listings.ts), so that a store page never counts a workspace's listings again.
create table workspace_listing_counts (
  workspace_id uuid primary key references workspaces (workspace_id),
  listings integer not null check (listings >= 0)
);
insert into workspace_listing_counts (workspace_id, listings)
select workspace_id, count(*)::int from listings group by workspace_id;
