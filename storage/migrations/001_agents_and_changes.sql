-- Agents, their changes feed, and feedback. SQL stays within PostgreSQL 15.

create table agents (
  agent_id uuid primary key,
  name text not null,
  -- SHA-256 of the API token; the token itself is never stored. Null: cannot sign in.
  token_hash bytea unique,
  is_operator boolean not null default false,
  created_at timestamptz not null default now(),
  -- The agent machine's persisted snapshot (xstate), and its optimistic-concurrency version.
  machine jsonb,
  version integer not null default 0
);

create unique index agents_one_operator on agents (is_operator) where is_operator;

-- One row per agent: the newest change's sequence number and the agent's remembered place.
-- Writers take this row's lock to number a change, so per agent the numbers commit in order
-- and a reader that has seen n has seen everything up to n.
create table feed_heads (
  agent_id uuid primary key references agents (agent_id),
  last_seq bigint not null default 0,
  read_seq bigint not null default 0
);

create table changes (
  agent_id uuid not null references agents (agent_id),
  seq bigint not null,
  event_id uuid not null unique,
  type text not null,
  at timestamptz not null default now(),
  workspace_id uuid,
  actor jsonb,
  data jsonb not null,
  primary key (agent_id, seq)
);

create table feedback (
  feedback_id uuid primary key,
  agent_id uuid references agents (agent_id),
  category text not null,
  message text not null,
  created_at timestamptz not null default now(),
  answer text,
  answered_at timestamptz
);

-- Idempotency-Key replays. Keys are stored hashed and answers encrypted under the key itself,
-- so a stored answer (a sign-up's token, say) is readable only by whoever holds the key.
-- `response` is null while the first call runs.
create table idempotency_keys (
  key_hash text primary key,
  request_hash text not null,
  response text,
  created_at timestamptz not null default now()
);
