import type { Queryable } from './driver.ts';

/** Replays last this long (PROMISES.md 5). */
const LIFETIME = "interval '24 hours'";

export interface IdempotencyRow {
  requestHash: string;
  /** The encrypted answer; null while the first call runs. */
  response: string | null;
  ageSeconds: number;
}

/**
 * Claims a key for a first call. Returns null when claimed now, or the row already there.
 * An expired row is replaced as if absent.
 */
export async function claimIdempotencyKey(
  db: Queryable,
  keyHash: string,
  requestHash: string,
): Promise<IdempotencyRow | null> {
  await db.query(
    `delete from idempotency_keys where key_hash = $1 and created_at < now() - ${LIFETIME}`,
    [keyHash],
  );
  const claimed = await db.query(
    'insert into idempotency_keys (key_hash, request_hash) values ($1, $2) on conflict do nothing returning key_hash',
    [keyHash, requestHash],
  );
  if (claimed.length > 0) return null;
  const [row] = await db.query<{ request_hash: string; response: string | null; age: number }>(
    `select request_hash, response, extract(epoch from now() - created_at)::float8 as age
     from idempotency_keys where key_hash = $1`,
    [keyHash],
  );
  if (!row) return claimIdempotencyKey(db, keyHash, requestHash);
  return { requestHash: row.request_hash, response: row.response, ageSeconds: row.age };
}

export async function completeIdempotencyKey(
  db: Queryable,
  keyHash: string,
  response: string,
): Promise<void> {
  await db.query('update idempotency_keys set response = $2 where key_hash = $1', [
    keyHash,
    response,
  ]);
}

/** Forgets a claim whose call failed on the service's side, so a retry runs again. */
export async function releaseIdempotencyKey(db: Queryable, keyHash: string): Promise<void> {
  await db.query('delete from idempotency_keys where key_hash = $1 and response is null', [
    keyHash,
  ]);
}
