-- The Ed25519 keys that sign receipts (actors/signing-keys.ts). One key is current (retired_at
-- null); rotation retires it but keeps the row, so receipts it signed keep verifying and the
-- public key stays in the JWKS.

create table signing_keys (
  -- base64url of the first 16 bytes of SHA-256 of the raw public key.
  kid text primary key,
  -- The raw 32-byte Ed25519 public key (the JWK's `x`).
  public_key bytea not null,
  -- PKCS#8 DER of the private key; when private_key_sealed, that DER encrypted under
  -- RECEIPT_KEY_SECRET (AES-256-GCM, see actors/signing-keys.ts). Anyone who can read this
  -- table unsealed can sign receipts as the service.
  private_key bytea not null,
  private_key_sealed boolean not null default false,
  created_at timestamptz not null default now(),
  retired_at timestamptz
);

create unique index signing_keys_one_current on signing_keys ((true)) where retired_at is null;
