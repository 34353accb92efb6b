-- A scheduled job's run is leased, not claimed for good: the process that claims a due run
-- records the fire it runs (running_fire), itself (lease_owner) and how long its claim holds
-- without a renewal (lease_until). It renews the lease while the job runs and, at the end,
-- moves next_run_at on and clears the three. A run whose process died keeps its row leased
-- until lease_until passes; another process then claims the same fire and runs it again.
alter table scheduled_jobs
  add column running_fire timestamptz,
  add column lease_owner text,
  add column lease_until timestamptz;
