-- The signed receipts of payments (actors/payments/receipts.ts), each chained in the workspace
-- of the payment's deal like its agreements, deliveries and ratings: a USDC payment requested,
-- a USDC payment final (with the transfer that paid it), an off-chain payment confirmed.
-- `payment_id` names the on-chain payment or the off-chain one, as `action` says.
create table payment_receipts (
  receipt_id uuid primary key,
  workspace_id uuid not null references workspaces (workspace_id),
  deal_id uuid not null references deals (deal_id),
  payment_id uuid not null,
  action text not null
    check (action in ('payment_requested', 'payment_final', 'offchain_payment_confirmed')),
  issued_at timestamptz not null,
  receipt jsonb not null,
  -- One receipt per payment and action: a move is made once.
  unique (payment_id, action)
);
-- list_receipts reads a workspace's chain newest first.
create index payment_receipts_by_workspace on payment_receipts (workspace_id, issued_at);
