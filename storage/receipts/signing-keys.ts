import type { Queryable, Transaction } from '../driver.ts';
import { ADVISORY_LOCK } from '../locks.ts';

/** A row of signing_keys; what the bytes mean is actors/receipts/signing-keys.ts's business. */
export interface SigningKeyRow {
  kid: string;
  /** Raw 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
  /** PKCS#8 DER, or that DER sealed under the deployment's secret when `sealed`. */
  privateKey: Uint8Array;
  sealed: boolean;
  createdAt: Date;
  /** Null for the current key. */
  retiredAt: Date | null;
}

interface Raw extends Record<string, unknown> {
  kid: string;
  public_key: Uint8Array;
  private_key: Uint8Array;
  private_key_sealed: boolean;
  created_at: Date;
  retired_at: Date | null;
}

const columns = 'kid, public_key, private_key, private_key_sealed, created_at, retired_at';
const toRow = (raw: Raw): SigningKeyRow => ({
  kid: raw.kid,
  publicKey: raw.public_key,
  privateKey: raw.private_key,
  sealed: raw.private_key_sealed,
  createdAt: raw.created_at,
  retiredAt: raw.retired_at,
});

/**
 * Makes the other writers of signing_keys wait until this transaction ends, so that two
 * processes starting (or rotating) at once on one PostgreSQL do not both make a current key.
 */
export async function lockSigningKeys(tx: Transaction): Promise<void> {
  await tx.query(`select pg_advisory_xact_lock(${ADVISORY_LOCK.signingKeys})`);
}

export async function findCurrentSigningKey(db: Queryable): Promise<SigningKeyRow | null> {
  const [raw] = await db.query<Raw>(`select ${columns} from signing_keys where retired_at is null`);
  return raw ? toRow(raw) : null;
}

export async function findSigningKey(db: Queryable, kid: string): Promise<SigningKeyRow | null> {
  const [raw] = await db.query<Raw>(`select ${columns} from signing_keys where kid = $1`, [kid]);
  return raw ? toRow(raw) : null;
}

/** Every key, retired ones included, oldest first. */
export async function listSigningKeys(db: Queryable): Promise<SigningKeyRow[]> {
  const raws = await db.query<Raw>(`select ${columns} from signing_keys order by created_at, kid`);
  return raws.map(toRow);
}

/** Adds a new current key; fails (unique violation) while another key is current. */
export async function insertSigningKey(
  tx: Queryable,
  key: { kid: string; publicKey: Uint8Array; privateKey: Uint8Array; sealed: boolean },
): Promise<SigningKeyRow> {
  const [raw] = await tx.query<Raw>(
    `insert into signing_keys (kid, public_key, private_key, private_key_sealed)
     values ($1, $2, $3, $4) returning ${columns}`,
    [key.kid, key.publicKey, key.privateKey, key.sealed],
  );
  return toRow(raw as Raw);
}

/** Retires the current key, if any; returns which and when. */
export async function retireCurrentSigningKey(
  tx: Queryable,
): Promise<{ kid: string; retiredAt: Date } | null> {
  const [raw] = await tx.query<{ kid: string; retired_at: Date }>(
    'update signing_keys set retired_at = now() where retired_at is null returning kid, retired_at',
  );
  return raw ? { kid: raw.kid, retiredAt: raw.retired_at } : null;
}

/** Replaces a key's plain PKCS#8 DER with its sealed form; a key already sealed is left alone. */
export async function sealSigningKey(
  tx: Queryable,
  kid: string,
  sealed: Uint8Array,
): Promise<void> {
  await tx.query(
    `update signing_keys set private_key = $2, private_key_sealed = true
     where kid = $1 and not private_key_sealed`,
    [kid, sealed],
  );
}
