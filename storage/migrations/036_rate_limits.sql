-- Rate limits shared by the processes of one database (issue 24, "rate limits shared"): one token
-- bucket per limit and key (an address), in whole units as server/http/rate-limit.ts counts them
-- (a request costs window_ms units, each millisecond adds `limit` units). A process leases a
-- slice of a bucket's credit and spends it locally; credit leased is gone from the bucket, so all
-- processes together never admit more than the limit. A row idle for a whole window is full, as
-- good as no row, and is swept.
create table rate_limits (
  bucket text primary key,
  credit bigint not null,
  updated_ms bigint not null,
  window_ms bigint not null,
  -- Units the last lease granted: what RETURNING reports of the update.
  granted bigint not null default 0
);
create index rate_limits_idle on rate_limits ((updated_ms + window_ms));
