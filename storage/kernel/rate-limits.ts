import type { Queryable } from '../driver.ts';

/** A token bucket's rule in units (server/http/rate-limit.ts): refill per ms, cost, capacity. */
export interface BucketRule {
  /** Units added each millisecond (the limit per window). */
  refillPerMs: number;
  /** Units one request costs (the window in ms). */
  cost: number;
  /** Units a full bucket holds. */
  capacity: number;
}

export interface LeasedCredit {
  /** Units granted now, a whole number of requests' cost (0: refused). */
  granted: number;
  /** Units left in the shared bucket after the grant. */
  left: number;
}

/**
 * Takes up to `wanted` requests' credit from a bucket in one statement: the bucket is refilled
 * for the time since its last lease (a new bucket starts full), then as many whole requests as
 * it holds, at most `wanted`, are taken out. Concurrent leases of one bucket serialize on its row.
 */
export async function leaseBucketCredit(
  db: Queryable,
  bucket: string,
  rule: BucketRule,
  wanted: number,
  nowMs: number,
): Promise<LeasedCredit> {
  const refilled =
    'least($4::bigint, b.credit + least(greatest(0, $2::bigint - b.updated_ms), b.window_ms) * $3::bigint)';
  const take = (held: string) => `least($6::bigint, ${held} / $5::bigint) * $5::bigint`;
  const [row] = await db.query<{ credit_left: string | number; granted: string | number }>(
    `insert into rate_limits as b (bucket, credit, updated_ms, window_ms, granted)
     values ($1, $4::bigint - ${take('$4::bigint')}, $2::bigint, $5::bigint, ${take('$4::bigint')})
     on conflict (bucket) do update set
       granted = ${take(refilled)},
       credit = ${refilled} - ${take(refilled)},
       updated_ms = greatest(b.updated_ms, $2::bigint)
     returning credit as credit_left, granted`,
    [bucket, nowMs, rule.refillPerMs, rule.capacity, rule.cost, wanted],
  );
  if (!row) throw new Error(`no rate limit row for ${bucket}`);
  return { granted: Number(row.granted), left: Number(row.credit_left) };
}

/** Deletes the buckets idle for a whole window: they are full again, as good as none. */
export async function sweepIdleBuckets(db: Queryable, nowMs: number): Promise<number> {
  const swept = await db.query(
    'delete from rate_limits where updated_ms + window_ms < $1::bigint returning bucket',
    [nowMs],
  );
  return swept.length;
}

/** The refilled credit of a bucket, in units: `b`'s as of `$2` (ms), `$3` units a ms, full at `$4`. */
const REFILLED =
  'least($4::bigint, b.credit + least(greatest(0, $2::bigint - b.updated_ms), b.window_ms) * $3::bigint)';

/**
 * What a bucket holds now, in units, refilled for the time since it was last touched, taking
 * nothing: for a budget checked before the work and spent only if the work overran. A bucket
 * with no row is full. A spent bucket may hold less than nothing (spendBucketCredit).
 */
export async function bucketCredit(
  db: Queryable,
  bucket: string,
  rule: BucketRule,
  nowMs: number,
): Promise<number> {
  const [row] = await db.query<{ credit: string | number }>(
    `select ${REFILLED} as credit from rate_limits as b where b.bucket = $1`,
    [bucket, nowMs, rule.refillPerMs, rule.capacity],
  );
  return row ? Number(row.credit) : rule.capacity;
}

/**
 * Spends one request's cost from a bucket whether or not it holds that much: what happened
 * (a query that ran past its limit) is counted even when it overdrew the bucket, which then
 * takes longer to refill. In one statement, serialized on the bucket's row.
 */
export async function spendBucketCredit(
  db: Queryable,
  bucket: string,
  rule: BucketRule,
  nowMs: number,
): Promise<void> {
  await db.query(
    `insert into rate_limits as b (bucket, credit, updated_ms, window_ms)
     values ($1, $4::bigint - $5::bigint, $2::bigint, $5::bigint)
     on conflict (bucket) do update set
       credit = ${REFILLED} - $5::bigint,
       updated_ms = greatest(b.updated_ms, $2::bigint)`,
    [bucket, nowMs, rule.refillPerMs, rule.capacity, rule.cost],
  );
}
