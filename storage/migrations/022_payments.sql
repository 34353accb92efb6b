-- Payments (actors/payments/, storage/payments.ts): USDC paid payer to payee and checked
-- on-chain, a payment being its machine's snapshot (machines/payment.ts) with the columns the
-- watcher, the reputation and the store read; the transfers that credited them; where the
-- watcher resumes; each workspace's log of payments; payments made any other way.
-- None of these is granted to agents' SQL (storage/index-scope.ts grants only the scope views):
-- who paid whom is read through the operations, never through the index.

-- The address each agent is paid at, proved with an EIP-191 signature of
-- `I control <address> and receive payments for agent <agent_id>.` (address EIP-55).
create table payout_addresses (
  agent_id uuid primary key references agents (agent_id),
  address text not null check (address ~ '^0x[0-9a-fA-F]{40}$'),
  signature text not null,
  verified_at timestamptz not null
);

-- Amounts are micro-USDC (6 decimals). Addresses are kept as written (EIP-55) and matched
-- without regard to case. `reported_tx_hash` is the payer's last reported transaction, kept
-- while its check is unknown; `final_at` is when the payment turned final.
create table payments (
  payment_id uuid primary key,
  deal_id uuid not null references deals (deal_id),
  workspace_id uuid not null references workspaces (workspace_id),
  payer_agent_id uuid not null references agents (agent_id),
  payee_agent_id uuid not null references agents (agent_id),
  memo text not null,
  amount_units bigint not null check (amount_units > 0),
  payee_address text not null check (payee_address ~ '^0x[0-9a-fA-F]{40}$'),
  deposit_address text check (deposit_address ~ '^0x[0-9a-fA-F]{40}$'),
  deposit_salt text,
  chain_id bigint not null check (chain_id > 0),
  token_address text not null check (token_address ~ '^0x[0-9a-fA-F]{40}$'),
  status text not null check (status in ('requested', 'seen', 'confirmed', 'final', 'expired')),
  machine jsonb not null,
  version integer not null default 1,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  reported_tx_hash text,
  final_at timestamptz,
  check (payer_agent_id <> payee_agent_id),
  check ((status = 'final') = (final_at is not null)),
  unique (deal_id, memo)
);
-- The watcher: open payments by the address a transfer went to (deposit or payee), and the
-- requested ones due to expire.
create index payments_open_by_deposit on payments (lower(deposit_address))
  where status in ('requested', 'seen', 'confirmed') and deposit_address is not null;
create index payments_open_by_payee on payments (lower(payee_address))
  where status in ('requested', 'seen', 'confirmed');
create index payments_in_flight on payments (payment_id) where status in ('seen', 'confirmed');
create index payments_due on payments (expires_at) where status = 'requested';
-- Reputation and the store: an agent's final payments, made and received.
create index payments_final_by_payer on payments (payer_agent_id, final_at) where status = 'final';
create index payments_final_by_payee on payments (payee_agent_id, final_at) where status = 'final';

-- Each transfer (a Transfer log: chain, transaction, log index) credits at most one payment,
-- ever, and a payment is credited by at most one transfer. A reorg that drops the transfer
-- deletes its row (the payment is requested again), so the transfer may credit again if it
-- reappears. Hashes are lower-case hex: no second spelling of one transaction gets in.
create table payment_credits (
  chain_id bigint not null check (chain_id > 0),
  tx_hash text not null check (tx_hash ~ '^0x[0-9a-f]{64}$'),
  log_index integer not null check (log_index >= 0),
  payment_id uuid not null unique references payments (payment_id),
  primary key (chain_id, tx_hash, log_index)
);

-- The last block the watcher checked on each chain: where it resumes after a restart.
create table chain_cursor (
  chain_id bigint primary key check (chain_id > 0),
  last_block bigint not null check (last_block >= 0)
);

-- A workspace's log of payments (`read_log`), numbered in commit order; read newest first.
-- `payment_id` names the payment (on-chain or off-chain, as `kind` says) the line is about.
create table workspace_log (
  seq bigserial primary key,
  workspace_id uuid not null references workspaces (workspace_id),
  at timestamptz not null,
  kind text not null check (kind ~ '^[a-z_]+(\.[a-z_]+)+$'),
  payment_id uuid,
  data jsonb not null
);
create index workspace_log_by_workspace on workspace_log (workspace_id, seq desc);

-- Payments made any other way: recorded by one party, confirmed by the other. They never back
-- a rating.
create table offchain_payments (
  offchain_payment_id uuid primary key,
  deal_id uuid not null references deals (deal_id),
  workspace_id uuid not null references workspaces (workspace_id),
  payer_agent_id uuid not null references agents (agent_id),
  payee_agent_id uuid not null references agents (agent_id),
  recorded_by uuid not null references agents (agent_id),
  amount text not null,
  currency text not null,
  means text not null,
  note text,
  status text not null check (status in ('recorded', 'confirmed')),
  recorded_at timestamptz not null,
  confirmed_at timestamptz,
  confirmed_by uuid references agents (agent_id),
  check (payer_agent_id <> payee_agent_id),
  check (recorded_by in (payer_agent_id, payee_agent_id)),
  check ((status = 'confirmed') = (confirmed_at is not null and confirmed_by is not null)),
  check (confirmed_by is null
    or (confirmed_by in (payer_agent_id, payee_agent_id) and confirmed_by <> recorded_by))
);
create index offchain_payments_by_deal on offchain_payments (deal_id, recorded_at);
create index offchain_payments_confirmed_by_payer on offchain_payments (payer_agent_id)
  where status = 'confirmed';
create index offchain_payments_confirmed_by_payee on offchain_payments (payee_agent_id)
  where status = 'confirmed';
