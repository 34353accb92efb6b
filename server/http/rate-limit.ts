import { realClock, type Clock } from '../../actors/kernel/clock.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { AddressOf, Peer } from './client-address.ts';

/** A limit: `limit` requests per `windowSeconds`, refilled evenly (a token bucket). */
export interface Limit {
  limit: number;
  windowSeconds: number;
}

/**
 * A bucket counts credit in whole units: a request costs `windowMs` units and every
 * millisecond adds `limit` of them, so a full bucket holds `limit * windowMs`. Whole numbers
 * keep the arithmetic exact: fractional tokens once made a Retry-After one rounding short.
 */
interface Bucket {
  credit: number;
  updated: number;
}

/** A refusal that carries the headers telling the caller when to come back. */
export class RateLimited extends ServiceError {
  constructor(
    detail: string,
    retryAfterSeconds: number,
    readonly headers: Record<string, string>,
  ) {
    super('rate_limited', detail, { retry_after_seconds: retryAfterSeconds });
  }
}

/** The headers of a limiter without a limit: none, one frozen object for every request. */
export const NO_RATE_LIMIT: Readonly<Record<string, string>> = Object.freeze({});

/** Buckets kept at most; the fullest (idle) ones are dropped first past this. */
const MAX_BUCKETS = 100_000;

/** Who is counted: an address, or a request whose address is read only when there is a limit. */
export type Caller = string | Peer;

/** The RateLimit headers of an admitted request. */
export type LimitHeaders = Readonly<Record<string, string>>;

/**
 * A per-address request limit, kept in this process (RateLimiter) or shared by the processes
 * of one database (SharedRateLimiter). Both refuse alike: 429 `rate_limited` with the
 * RateLimit headers and `Retry-After`.
 */
export interface RequestLimiter {
  readonly rule: Limit;
  /** Takes one request (RateLimiter.take): the headers, or a promise of them when credit is fetched. */
  take(from: Caller): LimitHeaders | Promise<LimitHeaders>;
}

/**
 * Takes one request and gives the outcome as a function that returns the headers or throws
 * the refusal: for a door that admits synchronously and formats refusals its own way.
 */
export async function admission(
  limiter: RequestLimiter,
  from: Caller,
): Promise<() => LimitHeaders> {
  try {
    const headers = await limiter.take(from);
    return () => headers;
  } catch (error) {
    return () => {
      throw error;
    };
  }
}

const remoteAddress: AddressOf = (peer) => peer.remoteAddress;

/**
 * Request-rate limits per key (a caller's address), in this process. A request over the limit
 * is refused with 429 `rate_limited`, `Retry-After` and the RateLimit headers, before any work
 * is done.
 */
export class RateLimiter implements RequestLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Units one request costs. */
  private readonly cost: number;
  /** Units a full bucket holds. */
  private readonly capacity: number;

  constructor(
    readonly rule: Limit,
    private readonly clock: Clock = realClock,
    private readonly addressOf: AddressOf = remoteAddress,
  ) {
    this.cost = rule.windowSeconds * 1000;
    this.capacity = rule.limit * this.cost;
  }

  /**
   * Takes one request for `key` (an address, or a request whose address is read only when
   * there is a limit: reading it costs on uWS). Returns the RateLimit headers to send with
   * the answer, or throws `rate_limited` whose `headers` member (kept out of the body) says when
   * to retry.
   */
  take(from: Caller): LimitHeaders {
    if (!Number.isFinite(this.rule.limit)) return NO_RATE_LIMIT;
    const key = typeof from === 'string' ? from : this.addressOf(from);
    const now = this.clock.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.sweep(now);
      bucket = { credit: this.capacity, updated: now };
      this.buckets.set(key, bucket);
    } else {
      bucket.credit = this.refilled(bucket, now);
      bucket.updated = now;
    }
    if (bucket.credit < this.cost) {
      throw refusal(this.rule, Math.max(1, this.secondsUntil(bucket.credit, this.cost)));
    }
    bucket.credit -= this.cost;
    return limitHeaders(
      this.rule,
      Math.floor(bucket.credit / this.cost),
      this.secondsUntil(bucket.credit, this.capacity),
    );
  }

  private refilled(bucket: Bucket, now: number): number {
    return Math.min(
      this.capacity,
      bucket.credit + Math.max(0, now - bucket.updated) * this.rule.limit,
    );
  }

  /** Whole seconds until a bucket holding `credit` holds `target`. */
  private secondsUntil(credit: number, target: number): number {
    return secondsUntil(this.rule, credit, target);
  }

  /** Drops buckets that have refilled completely: they hold nothing worth remembering. */
  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (this.refilled(bucket, now) >= this.capacity) this.buckets.delete(key);
    }
    if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear();
  }
}

/** Whole seconds until a bucket of `rule` holding `credit` units holds `target`. */
function secondsUntil(rule: Limit, credit: number, target: number): number {
  return Math.ceil(Math.ceil((target - credit) / rule.limit) / 1000);
}

function limitHeaders(
  rule: Limit,
  remaining: number,
  reset: number,
  retryAfter?: string,
): Record<string, string> {
  const headers: Record<string, string> = {
    'ratelimit-limit': String(rule.limit),
    'ratelimit-remaining': String(remaining),
    'ratelimit-reset': String(reset),
    'ratelimit-policy': `${rule.limit};w=${rule.windowSeconds}`,
  };
  if (retryAfter) headers['retry-after'] = retryAfter;
  return headers;
}

function refusal(rule: Limit, retry: number): RateLimited {
  return new RateLimited(
    `Too many requests: at most ${rule.limit} per ${rule.windowSeconds} s. Retry after ${retry} s; to follow your feed, use /changes/wait or socket.io rather than polling.`,
    retry,
    limitHeaders(rule, 0, retry, String(retry)),
  );
}

/** Leases up to `wanted` requests' credit of a shared bucket (actors/kernel/shared-rate-limits.ts). */
export type LeaseCredit = (
  bucket: string,
  rule: { refillPerMs: number; cost: number; capacity: number },
  wanted: number,
) => Promise<{ granted: number; left: number }>;

/** What this process holds of one key's shared bucket. */
interface Held {
  /** Units leased and not yet spent. */
  credit: number;
  /** Units the shared bucket held after the last lease, and when. */
  left: number;
  at: number;
  /** Until when the shared bucket is known to be empty (0: not known). */
  refusedUntil: number;
  /** The lease under way: requests that find no credit wait for it rather than ask again. */
  pending: Promise<void> | undefined;
}

/** Leases asked for a key at most, one after another, before a request is refused for now. */
const LEASES_PER_REQUEST = 3;

/**
 * A per-address limit shared by the processes of one PostgreSQL database, as leased credit: a
 * process takes a slice of a key's token bucket from its row in one statement, spends it here
 * without asking anyone, and asks again when it runs out. Credit leased is gone from the shared
 * bucket, so all processes together admit at most the limit; the slice (a fiftieth of the
 * limit, at least one request) bounds what a process may hold unspent while another is refused.
 * A refusal says Retry-After from the shared bucket, and until then this process refuses that
 * key without asking again (a flood costs no database round trips).
 */
class SharedRateLimiter implements RequestLimiter {
  private readonly keys = new Map<string, Held>();
  private readonly units: { refillPerMs: number; cost: number; capacity: number };
  private readonly slice: number;
  /**
   * While the database cannot lease credit (it is away), this process counts on its own, so
   * requests that need no database (a warm whoami, documents) are still served, and limited.
   */
  private readonly local: RateLimiter;
  /** Until when (service clock) leases are not asked for, after one failed. */
  private databaseAwayUntil = 0;

  constructor(
    /** Names the limit in the shared table (`requests`, `sign-ups`). */
    private readonly name: string,
    readonly rule: Limit,
    private readonly lease: LeaseCredit,
    private readonly clock: Clock = realClock,
    private readonly addressOf: AddressOf = remoteAddress,
  ) {
    const cost = rule.windowSeconds * 1000;
    this.units = { refillPerMs: rule.limit, cost, capacity: rule.limit * cost };
    this.slice = Math.max(1, Math.ceil(rule.limit / 50));
    this.local = new RateLimiter(rule, clock, addressOf);
  }

  take(from: Caller): LimitHeaders | Promise<LimitHeaders> {
    if (!Number.isFinite(this.rule.limit)) return NO_RATE_LIMIT;
    const key = typeof from === 'string' ? from : this.addressOf(from);
    const held = this.keys.get(key);
    // The hot path: credit in hand, no waiting.
    if (held && held.credit >= this.units.cost) return this.spend(held);
    if (this.clock.now() < this.databaseAwayUntil) return this.local.take(key);
    return this.leaseAndTake(key).catch((error: unknown) => {
      if (error instanceof RateLimited) throw error;
      // No lease (the database is away): count here for a second, then ask again.
      this.databaseAwayUntil = this.clock.now() + 1000;
      return this.local.take(key);
    });
  }

  private async leaseAndTake(key: string): Promise<LimitHeaders> {
    for (let attempt = 0; attempt < LEASES_PER_REQUEST; attempt++) {
      const held = this.keys.get(key);
      const now = this.clock.now();
      if (held && held.credit >= this.units.cost) return this.spend(held);
      if (held && now < held.refusedUntil) throw this.refusalUntil(held.refusedUntil, now);
      await this.refill(key);
    }
    // Others of this process spent each lease first: the key is busy past its share for now.
    throw refusal(this.rule, 1);
  }

  private refill(key: string): Promise<void> {
    let held = this.keys.get(key);
    if (!held) {
      if (this.keys.size >= MAX_BUCKETS) this.forgetIdle();
      held = { credit: 0, left: this.units.capacity, at: 0, refusedUntil: 0, pending: undefined };
      this.keys.set(key, held);
    }
    const target = held;
    target.pending ??= this.lease(`${this.name}:${key}`, this.units, this.slice)
      .then(({ granted, left }) => {
        const at = this.clock.now();
        target.credit += granted;
        target.left = left;
        target.at = at;
        target.refusedUntil =
          granted === 0
            ? at + Math.max(1000, secondsUntil(this.rule, left, this.units.cost) * 1000)
            : 0;
      })
      .finally(() => (target.pending = undefined));
    return target.pending;
  }

  private spend(held: Held): LimitHeaders {
    held.credit -= this.units.cost;
    // What is left: this process's credit, and the shared bucket as last seen, refilled since.
    const elapsed = Math.max(0, this.clock.now() - held.at);
    const shared = Math.min(this.units.capacity, held.left + elapsed * this.rule.limit);
    const units = Math.min(this.units.capacity, held.credit + shared);
    return limitHeaders(
      this.rule,
      Math.floor(units / this.units.cost),
      secondsUntil(this.rule, units, this.units.capacity),
    );
  }

  private refusalUntil(until: number, now: number): RateLimited {
    return refusal(this.rule, Math.max(1, Math.ceil((until - now) / 1000)));
  }

  /** Forgets keys with nothing in hand and no lease under way (their credit was spent). */
  private forgetIdle(): void {
    for (const [key, held] of this.keys) {
      if (!held.pending && held.credit < this.units.cost) this.keys.delete(key);
    }
    if (this.keys.size >= MAX_BUCKETS) {
      for (const [key, held] of this.keys) if (!held.pending) this.keys.delete(key);
    }
  }
}

/** The limit `rule` under `name`: shared through `lease` when given, else in this process. */
export function requestLimiter(
  name: string,
  rule: Limit,
  options: { clock?: Clock; addressOf?: AddressOf; lease?: LeaseCredit | undefined },
): RequestLimiter {
  return options.lease
    ? new SharedRateLimiter(name, rule, options.lease, options.clock, options.addressOf)
    : new RateLimiter(rule, options.clock, options.addressOf);
}
