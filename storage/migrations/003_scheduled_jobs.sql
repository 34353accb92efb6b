-- The scheduler's jobs: when each is next due. Kept here rather than in memory so that a
-- restart runs at once whatever fell due while the service was down, and so that several
-- processes on one database run a due job once: the one whose claim moves next_run_at wins.
create table scheduled_jobs (
  name text primary key,
  next_run_at timestamptz not null
);
