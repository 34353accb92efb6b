import { ServiceError } from '../../protocol/errors.ts';

/** A limit: `limit` requests per `windowSeconds`, refilled evenly (a token bucket). */
export interface Limit {
  limit: number;
  windowSeconds: number;
}

interface Bucket {
  tokens: number;
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

/** Buckets kept at most; the fullest (idle) ones are dropped first past this. */
const MAX_BUCKETS = 100_000;

/**
 * Request-rate limits per key (a caller's address). A request over the limit is refused with
 * 429 `rate_limited`, `Retry-After` and the RateLimit headers, before any work is done.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(
    readonly rule: Limit,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = rule.limit / (rule.windowSeconds * 1000);
  }

  /**
   * Takes one request for `key`. Returns the RateLimit headers to send with the answer, or
   * throws `rate_limited` whose `headers` member (kept out of the body) says when to retry.
   */
  take(key: string): Record<string, string> {
    if (!Number.isFinite(this.rule.limit)) return {};
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.sweep(now);
      bucket = { tokens: this.rule.limit, updated: now };
      this.buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(
        this.rule.limit,
        bucket.tokens + (now - bucket.updated) * this.perMs,
      );
      bucket.updated = now;
    }
    const untilOne = Math.ceil((1 - bucket.tokens) / this.perMs / 1000);
    if (bucket.tokens < 1) {
      const retry = Math.max(1, untilOne);
      throw new RateLimited(
        `Too many requests: at most ${this.rule.limit} per ${this.rule.windowSeconds} s. Retry after ${retry} s; to follow your feed, use /changes/wait or socket.io rather than polling.`,
        retry,
        this.headers(0, retry, String(retry)),
      );
    }
    bucket.tokens -= 1;
    const reset = Math.ceil((this.rule.limit - bucket.tokens) / this.perMs / 1000);
    return this.headers(Math.floor(bucket.tokens), reset);
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
      if (bucket.tokens + (now - bucket.updated) * this.perMs >= this.rule.limit)
        this.buckets.delete(key);
    }
    if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear();
  }
}
