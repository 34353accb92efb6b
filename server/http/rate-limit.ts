import { realClock, type Clock } from '../../actors/kernel/clock.ts';
import { ServiceError } from '../../protocol/errors.ts';

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

/**
 * Request-rate limits per key (a caller's address). A request over the limit is refused with
 * 429 `rate_limited`, `Retry-After` and the RateLimit headers, before any work is done.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Units one request costs. */
  private readonly cost: number;
  /** Units a full bucket holds. */
  private readonly capacity: number;

  constructor(
    readonly rule: Limit,
    private readonly clock: Clock = realClock,
  ) {
    this.cost = rule.windowSeconds * 1000;
    this.capacity = rule.limit * this.cost;
  }

  /**
   * Takes one request for `key` (an address, or a request whose `remoteAddress` is read only
   * when there is a limit: reading it costs on uWS). Returns the RateLimit headers to send with
   * the answer, or throws `rate_limited` whose `headers` member (kept out of the body) says when
   * to retry.
   */
  take(from: string | { readonly remoteAddress: string }): Readonly<Record<string, string>> {
    if (!Number.isFinite(this.rule.limit)) return NO_RATE_LIMIT;
    const key = typeof from === 'string' ? from : from.remoteAddress;
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
      const retry = Math.max(1, this.secondsUntil(bucket.credit, this.cost));
      throw new RateLimited(
        `Too many requests: at most ${this.rule.limit} per ${this.rule.windowSeconds} s. Retry after ${retry} s; to follow your feed, use /changes/wait or socket.io rather than polling.`,
        retry,
        this.headers(0, retry, String(retry)),
      );
    }
    bucket.credit -= this.cost;
    return this.headers(
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
    return Math.ceil(Math.ceil((target - credit) / this.rule.limit) / 1000);
  }

  private headers(remaining: number, reset: number, retryAfter?: string): Record<string, string> {
    const headers: Record<string, string> = {
      'ratelimit-limit': String(this.rule.limit),
      'ratelimit-remaining': String(remaining),
      'ratelimit-reset': String(reset),
      'ratelimit-policy': `${this.rule.limit};w=${this.rule.windowSeconds}`,
    };
    if (retryAfter) headers['retry-after'] = retryAfter;
    return headers;
  }

  /** Drops buckets that have refilled completely: they hold nothing worth remembering. */
  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (this.refilled(bucket, now) >= this.capacity) this.buckets.delete(key);
    }
    if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear();
  }
}
