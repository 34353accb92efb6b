/**
 * Which blobs the database still uses: a blob must stay in the store while a file version keeps
 * its bytes (`file_versions.bytes_kept`; the current version of every live path always does), a
 * block staged through a storage link holds them (`staged_blocks`), or an upload in progress has
 * hashed them and is about to make them visible or commit them (`upload_reservations.sha256`),
 * or it is the store's identity blob (`blob_store_identity`, actors/files/blob-store-identity.ts).
 * Each is looked up by an index on its sha256 (migrations 006 and 014).
 */
import type { Queryable, Transaction } from '../driver.ts';
import { ADVISORY_LOCK_CLASS } from '../locks.ts';

/** The class of the advisory locks on blobs, one per sha256 (storage/locks.ts). */
export const BLOB_LOCK_CLASS = ADVISORY_LOCK_CLASS.blobs;

/**
 * Holds the blob's advisory lock until the transaction ends. The collector takes it before it
 * decides a blob is unused and deletes it; a save takes it before it commits a row that uses
 * the blob; so the one waits for the other, and neither acts on what the other is changing.
 */
export async function lockBlob(tx: Transaction, sha256: string): Promise<void> {
  await tx.query(`select pg_advisory_xact_lock(${BLOB_LOCK_CLASS}, hashtext($1))`, [sha256]);
}

const REFERENCES = `
  select sha256 from file_versions where bytes_kept and sha256 = any($1::text[])
  union
  select sha256 from staged_blocks where sha256 = any($1::text[])
  union
  select sha256 from upload_reservations where sha256 = any($1::text[])
  union
  select sha256 from blob_store_identity where sha256 = any($1::text[])`;

/** Whether any row still uses the blob. */
export async function isBlobReferenced(db: Queryable, sha256: string): Promise<boolean> {
  return (await referencedBlobs(db, [sha256])).has(sha256);
}

/** Those of `sha256s` that some row still uses, in one query. */
export async function referencedBlobs(
  db: Queryable,
  sha256s: readonly string[],
): Promise<Set<string>> {
  if (sha256s.length === 0) return new Set();
  const rows = await db.query<{ sha256: string }>(REFERENCES, [sha256s]);
  return new Set(rows.map((row) => row.sha256));
}
