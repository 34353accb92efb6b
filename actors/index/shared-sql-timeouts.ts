import {
  bucketCredit,
  spendBucketCredit,
  type BucketRule,
} from '../../storage/kernel/rate-limits.ts';
import type { Services } from '../kernel/services.ts';
import type { SharedTimeouts } from './sql-timeout-budget.ts';

/** The per-agent budget's window, as SqlTimeoutBudget counts it in memory. */
const WINDOW_MS = 60_000;

/**
 * Each agent's budget of index queries past their time limit, shared by the processes of one
 * PostgreSQL database: a token bucket per agent in the shared rate-limit table
 * (storage/kernel/rate-limits.ts), `limit` timeouts a minute, refilled evenly. A query is
 * admitted after one read of the bucket (one round trip per index query); a timeout spends
 * from it, so a timeout on one process counts on every other.
 */
export function sharedSqlTimeouts(services: Services): SharedTimeouts {
  const ruleOf = (limit: number): BucketRule => ({
    refillPerMs: limit,
    cost: WINDOW_MS,
    capacity: limit * WINDOW_MS,
  });
  const bucketOf = (agentId: string) => `sql-timeouts:${agentId}`;
  return {
    async left(agentId, limit) {
      const rule = ruleOf(limit);
      const now = services.clock.now();
      return (await bucketCredit(services.driver, bucketOf(agentId), rule, now)) / rule.cost;
    },
    async record(agentId, limit) {
      await spendBucketCredit(
        services.driver,
        bucketOf(agentId),
        ruleOf(limit),
        services.clock.now(),
      );
    },
  };
}
