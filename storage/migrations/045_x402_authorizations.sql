-- Signed x402 payments (EIP-3009 `transferWithAuthorization`) the service accepted for a payment
-- (actors/payments/pay/x402-authorization.ts). The key is what the token itself allows once: a
-- nonce of one signer on one token of one chain. So one authorization pays one payment once:
-- the same signature sent again, or sent for another payment, finds its row taken. The row is
-- kept for the payee to submit when no facilitator settles it (`payment.authorized`), and
-- names the transaction that settled it once one did. It holds no key and no money: anyone
-- may submit a signed authorization, and the token moves the money from `from` to `to` only.
create table x402_authorizations (
  chain_id bigint not null,
  token_address text not null check (token_address ~ '^0x[0-9a-f]{40}$'),
  from_address text not null check (from_address ~ '^0x[0-9a-f]{40}$'),
  nonce text not null check (nonce ~ '^0x[0-9a-f]{64}$'),
  payment_id uuid not null references payments (payment_id),
  to_address text not null check (to_address ~ '^0x[0-9a-f]{40}$'),
  value_units bigint not null check (value_units > 0),
  valid_after bigint not null,
  valid_before bigint not null,
  signature text not null check (signature ~ '^0x[0-9a-f]{130}$'),
  x402_version smallint not null,
  received_at timestamptz not null,
  -- The facilitator's settlement: its transaction, or why it refused (then the payee may still
  -- submit the authorization itself).
  settled_tx_hash text check (settled_tx_hash ~ '^0x[0-9a-f]{64}$'),
  settle_error text,
  primary key (chain_id, token_address, from_address, nonce)
);
create index x402_authorizations_by_payment on x402_authorizations (payment_id, received_at);
