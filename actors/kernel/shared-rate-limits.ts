import {
  leaseBucketCredit,
  sweepIdleBuckets,
  type BucketRule,
  type LeasedCredit,
} from '../../storage/kernel/rate-limits.ts';
import type { Services } from './services.ts';

export type { BucketRule, LeasedCredit };

/** How often, at most, a process deletes the rows of idle buckets. */
const SWEEP_EVERY_MS = 60_000;

/** When each service last swept (one sweep at a time per process). */
const lastSweeps = new WeakMap<Services, { at: number; running: boolean }>();

/**
 * Rate limits that hold across the processes of one PostgreSQL database: credit of a token
 * bucket is leased from its row (storage/kernel/rate-limits.ts) and spent by the process that
 * took it; what one process took, no other can spend. On the way, now and then, the rows of
 * buckets idle for a whole window are swept.
 */
export async function leaseSharedCredit(
  services: Services,
  bucket: string,
  rule: BucketRule,
  wanted: number,
): Promise<LeasedCredit> {
  const now = services.clock.now();
  const leased = await leaseBucketCredit(services.driver, bucket, rule, wanted, now);
  sweepNowAndThen(services, now);
  return leased;
}

function sweepNowAndThen(services: Services, now: number): void {
  const last = lastSweeps.get(services) ?? { at: now, running: false };
  lastSweeps.set(services, last);
  if (last.running || now - last.at < SWEEP_EVERY_MS) return;
  last.running = true;
  last.at = now;
  // A failed sweep costs nothing but rows: the next one takes them.
  void sweepIdleBuckets(services.driver, now)
    .catch(() => 0)
    .finally(() => (last.running = false));
}
