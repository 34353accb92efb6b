import type { Queryable } from '../driver.ts';

/** Replays last this long (protocol/documents/protocol.md, "Idempotency"). */
const LIFETIME = "interval '24 hours'";

export interface IdempotencyRow {
  requestHash: string;
  /** The encrypted answer. */
  response: string;
}

/** The answer kept under a key, unless there is none or it is older than the lifetime. */
export async function findIdempotencyKey(
  db: Queryable,
  keyHash: string,
): Promise<IdempotencyRow | null> {
  const [row] = await db.query<{ request_hash: string; response: string | null }>(
    `select request_hash, response from idempotency_keys
     where key_hash = $1 and created_at > now() - ${LIFETIME} and response is not null`,
    [keyHash],
  );
  return row?.response ? { requestHash: row.request_hash, response: row.response } : null;
}

/**
 * Claims a key inside the transaction of the write it guards: true when claimed now. On
 * PostgreSQL a concurrent claim of the same key waits here until the first commits or rolls
 * back, so at most one write commits under a key. An expired claim is replaced.
 */
export async function claimIdempotencyKey(
  tx: Queryable,
  keyHash: string,
  requestHash: string,
): Promise<boolean> {
  await tx.query(
    `delete from idempotency_keys where key_hash = $1 and created_at < now() - ${LIFETIME}`,
    [keyHash],
  );
  const claimed = await tx.query(
    'insert into idempotency_keys (key_hash, request_hash) values ($1, $2) on conflict do nothing returning key_hash',
    [keyHash, requestHash],
  );
  return claimed.length > 0;
}

/** Stores the answer, in the same transaction as the claim and the write. */
export async function completeIdempotencyKey(
  tx: Queryable,
  keyHash: string,
  response: string,
): Promise<void> {
  await tx.query('update idempotency_keys set response = $2 where key_hash = $1', [
    keyHash,
    response,
  ]);
}
