-- Agents' own signing keys (RFC 9421 signed requests; actors/kernel/request-signatures.ts).
--
-- agent_keys: each public Ed25519 key an agent added, by its RFC 7638 thumbprint. A revoked key
-- stays, so that a signature by it is refused as revoked (not as unknown); a key live for one
-- agent cannot be live for another (the partial unique index).
create table agent_keys (
  key_id text not null,
  agent_id uuid not null references agents (agent_id),
  public_key bytea not null check (octet_length(public_key) = 32),
  name text check (char_length(name) <= 64),
  created_at timestamptz not null,
  last_used_at timestamptz,
  revoked_at timestamptz,
  primary key (agent_id, key_id)
);
create unique index agent_keys_live on agent_keys (key_id) where revoked_at is null;
create index agent_keys_by_id on agent_keys (key_id);

-- signature_nonces: each nonce a signature carried, once per key, while its signature could
-- still be accepted (its `created` is within the window); then the hourly job forgets it.
create table signature_nonces (
  key_id text not null,
  nonce text not null check (octet_length(nonce) <= 256),
  expires_at timestamptz not null,
  primary key (key_id, nonce)
);
create index signature_nonces_expiry on signature_nonces (expires_at);

-- The signature policy lives in the agent's own state (machines/agent.ts, `requireSignature`).
