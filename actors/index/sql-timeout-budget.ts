import { ServiceError } from '../../protocol/errors.ts';
import type { Clock } from '../kernel/clock.ts';

/** Queries past the time limit are counted over the last minute. */
const WINDOW_MS = 60_000;

export interface SqlTimeoutLimits {
  /** Queries of one agent that may run past the time limit in any minute (0: no limit). */
  perAgent: number;
  /** Queries of all agents together that may do so (0: no limit): a crowd of sybils included. */
  total: number;
}

export const DEFAULT_SQL_TIMEOUT_LIMITS: SqlTimeoutLimits = { perAgent: 3, total: 30 };

/** Agents' accounts kept at most; past this, those with nothing recent are dropped. */
const MAX_ACCOUNTS = 10_000;

/**
 * The per-agent part of the budget kept where every process of a deployment sees it
 * (actors/index/shared-sql-timeouts.ts, on PostgreSQL).
 */
export interface SharedTimeouts {
  /**
   * How many more timeouts `agentId` may run into now, of its `limit` a minute: a fraction as
   * the budget refills evenly, below zero when overdrawn (timeouts counted at once elsewhere).
   */
  left(agentId: string, limit: number): Promise<number>;
  /** Counts one timeout of `agentId`. */
  record(agentId: string, limit: number): Promise<void>;
}

/** One agent's account, or everyone's: times of recent timeouts, and queries running now. */
interface Account {
  timeouts: number[];
  running: number;
}

/**
 * A budget of index queries that run past their time limit. A query that times out held a
 * database connection for the whole limit (on PGlite, the one connection every write needs), so
 * each agent may spend only a few a minute, and all agents together a few more. An agent's query
 * may start only while its timeouts of the last minute plus its queries running now stay under
 * its limit (a running query may still time out, so it holds its place until it ends), and
 * while the timeouts of all agents in the last minute stay under the total (others' running
 * queries do not count there: sql-slots.ts shares the running places fairly). Past a limit
 * the query is refused with 429 `rate_limited` and Retry-After, before it runs.
 *
 * Kept in memory per process; with `shared` (several processes on one PostgreSQL) each agent's
 * timeouts are counted where every process sees them, so a timeout on one counts on all, while
 * the queries it has running are counted by the process that runs them. The `total` budget stays
 * per process on purpose: it guards this process's own connections (its pool, on PGlite its one
 * connection), which a crowd of slow queries elsewhere does not touch.
 */
export class SqlTimeoutBudget {
  private readonly agents = new Map<string, Account>();
  private readonly everyone: Account = { timeouts: [], running: 0 };

  constructor(
    readonly limits: SqlTimeoutLimits,
    private readonly clock: Clock,
    private readonly shared?: SharedTimeouts,
  ) {}

  /**
   * Takes a place for one query of `agentId`, or throws `rate_limited`. The caller must call
   * the returned function once the query ended, saying whether it ran past its time limit.
   */
  async admit(agentId: string): Promise<(timedOut: boolean) => Promise<void>> {
    const perAgent = this.limits.perAgent;
    // Read first: nothing below waits, so the agent's queries running here are counted as of now.
    const sharedLeft =
      this.shared && perAgent > 0 ? await this.shared.left(agentId, perAgent) : undefined;
    const now = this.clock.now();
    if (this.agents.size >= MAX_ACCOUNTS) this.sweep(now);
    const agent = this.agents.get(agentId) ?? { timeouts: [], running: 0 };
    if (sharedLeft !== undefined) refuseIfSharedSpent(sharedLeft, perAgent, agent.running);
    else this.refuseIfSpent(agent, perAgent, now, 'you');
    // All agents together: only timeouts that happened. Counting others' running queries too let
    // ten agents with three slow queries each refuse everyone else (issue 32); how many run at
    // once is the slots' to bound (sql-slots.ts), so this overshoots by at most those.
    this.refuseIfSpent(this.everyone, this.limits.total, now, 'all agents together', false);
    this.agents.set(agentId, agent);
    agent.running++;
    this.everyone.running++;
    let settled = false;
    return async (timedOut) => {
      if (settled) return;
      settled = true;
      agent.running--;
      this.everyone.running--;
      if (timedOut) {
        const at = this.clock.now();
        agent.timeouts.push(at);
        this.everyone.timeouts.push(at);
      }
      if (agent.running === 0 && agent.timeouts.length === 0) this.agents.delete(agentId);
      // Counted before the answer goes out, so the agent's next query anywhere sees it. A count
      // that fails (the database gone) loses one timeout: the query's own answer matters more.
      if (timedOut && this.shared && perAgent > 0)
        await this.shared.record(agentId, perAgent).catch(() => undefined);
    };
  }

  private refuseIfSpent(
    account: Account,
    limit: number,
    now: number,
    who: string,
    countRunning = true,
  ): void {
    if (limit <= 0) return;
    const recent = account.timeouts.filter((at) => at > now - WINDOW_MS);
    account.timeouts = recent;
    const running = countRunning ? account.running : 0;
    if (recent.length + running < limit) return;
    // Places come back when a timeout leaves the window, or when a running query ends.
    const oldest = recent[0];
    const retryAfter =
      recent.length >= limit && oldest !== undefined
        ? Math.max(1, Math.ceil((oldest + WINDOW_MS - now) / 1000))
        : 1;
    throw overBudget(limit, who, recent.length, running, retryAfter);
  }

  private sweep(now: number): void {
    for (const [agentId, account] of this.agents) {
      const last = account.timeouts.at(-1);
      if (account.running === 0 && (last === undefined || last <= now - WINDOW_MS))
        this.agents.delete(agentId);
    }
  }
}

/**
 * Refuses a query of an agent whose shared budget, `left` timeouts, has no room for one more
 * beside the `running` queries of this process (each may still time out, so holds a place).
 */
function refuseIfSharedSpent(left: number, limit: number, running: number): void {
  const needed = running + 1;
  if (left >= needed) return;
  // The budget refills `limit` timeouts a minute, evenly.
  const retryAfter = Math.max(1, Math.ceil(((needed - left) * WINDOW_MS) / limit / 1000));
  const spent = Math.max(0, Math.ceil(limit - left));
  throw overBudget(limit, 'you', spent, running, retryAfter);
}

function overBudget(
  limit: number,
  who: string,
  recent: number,
  running: number,
  retryAfter: number,
): ServiceError {
  return new ServiceError(
    'rate_limited',
    `Index queries that run past their time limit are limited to ${limit} a minute for ${who}` +
      ` (${recent} in the last minute, ${running} running now). Retry after` +
      ` ${retryAfter} s, and narrow the query with WHERE or LIMIT so that it ends in time.`,
    { retry_after_seconds: retryAfter },
    { 'retry-after': String(retryAfter) },
  );
}
