-- Account safety (issue 23): many tokens per agent, each with scopes, an expiry and a
-- revocation; suspended agents; the operator's log; hidden listings; webhooks.

-- Every API token of every agent. Only the SHA-256 of a token is kept. `scopes` restricts
-- what the token may do ('read', 'workspace:<id>'); an empty list is the agent's full access.
-- `read_seq` is a restricted token's own place in the agent's changes feed (restricted
-- tokens never move the agent's remembered place); null for full tokens.
create table agent_tokens (
  token_id uuid primary key,
  agent_id uuid not null references agents (agent_id),
  token_hash bytea not null unique,
  name text not null,
  scopes text[] not null default '{}',
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  expires_at timestamptz,
  revoked_at timestamptz,
  -- 'revoked' (by its agent), 'rotated', 'leaked', 'operator', 'replaced' (OPERATOR_TOKEN changed)
  revoked_reason text,
  -- Where a leaked token was found: {kind, workspace_id?, path?, listing_id?, message_id?, feedback_id?}
  revoked_where jsonb,
  read_seq bigint
);

create index agent_tokens_by_agent on agent_tokens (agent_id, created_at);

-- Each agent's one token so far becomes its first row, named for where it came from.
insert into agent_tokens (token_id, agent_id, token_hash, name, created_at)
select gen_random_uuid(), agent_id, token_hash,
       case when is_operator then 'OPERATOR_TOKEN' else 'sign-up' end, created_at
from agents where token_hash is not null;

alter table agents drop column token_hash;

-- Suspension by the operator: the agent's tokens stop working, its listings leave the store,
-- its public workspaces stop being readable by others. Null: not suspended.
alter table agents add column suspended_at timestamptz;
alter table agents add column suspended_reason text;

-- A listing the operator hid: it leaves the store (and its reads) until shown again.
alter table listings add column hidden_at timestamptz;
alter table listings add column hidden_reason text;

-- What the operator did, and why: one row per moderation act.
create table operator_log (
  entry_id uuid primary key,
  at timestamptz not null default now(),
  action text not null,
  -- What it was done to: {agent_id?, listing_id?, ...}
  target jsonb not null,
  reason text not null
);

create index operator_log_by_time on operator_log (at desc, entry_id);

-- One webhook per agent: the agent's feed, POSTed to `url` in order. `delivered_seq` is the
-- last feed event the endpoint took (the feed is the outbox). The secret is kept encrypted
-- under the service secret (it must be read back to sign).
create table webhooks (
  agent_id uuid primary key references agents (agent_id),
  url text not null,
  events text[],
  secret_cipher text not null,
  created_at timestamptz not null default now(),
  delivered_seq bigint not null,
  -- The event being retried: how many attempts so far, when the next is due, since when the
  -- endpoint fails (null while it answers), and the last failure in words.
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  failing_since timestamptz,
  last_error text,
  disabled_at timestamptz,
  -- One process delivers to one endpoint at a time: it holds the lease until `lease_until`.
  leased_by text,
  lease_until timestamptz
);
