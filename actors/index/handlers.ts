import { ServiceError } from '../../protocol/errors.ts';
import { ranOutOfMemory, runIndexQuery, sqlTimeoutMs } from './queries.ts';
import type { Services } from '../kernel/services.ts';
import { DEFAULT_SQL_TIMEOUT_LIMITS, SqlTimeoutBudget } from './sql-timeout-budget.ts';
import { sharedSqlTimeouts } from './shared-sql-timeouts.ts';
import { SQL_MAX_WAITING, SQL_QUERIES_PER_AGENT, SqlSlots } from './sql-slots.ts';
import type { Handler } from '../kernel/handler.ts';

/** One budget and one set of slots per service (tests run several in one process). */
const guards = new WeakMap<Services, { budget: SqlTimeoutBudget; slots: SqlSlots }>();

/**
 * Connections for agents' SQL: PGlite has one; postgres.js opens a pool of 4 for them
 * (storage/postgres/driver.ts, `agentsMax`).
 */
const AGENT_CONNECTIONS = { pglite: 1, postgres: 4 } as const;

function guardsOf(services: Services) {
  let found = guards.get(services);
  if (!found) {
    const limits = services.config.sqlTimeoutLimits ?? DEFAULT_SQL_TIMEOUT_LIMITS;
    // Several processes may share a PostgreSQL database: each agent's timeouts count on all.
    const shared = services.driver.kind === 'postgres' ? sharedSqlTimeouts(services) : undefined;
    const budget = new SqlTimeoutBudget(limits, services.clock, shared);
    const slots = new SqlSlots({
      running: AGENT_CONNECTIONS[services.driver.kind],
      perAgent: SQL_QUERIES_PER_AGENT,
      // A slot frees within one time limit (and the cancel's grace, a stopped thread's reopening).
      maxWaitMs: Math.max(5000, 3 * sqlTimeoutMs(services) + 1000),
      maxWaiting: SQL_MAX_WAITING,
    });
    found = { budget, slots };
    guards.set(services, found);
  }
  return found;
}

/** The slots of a service's index queries (tests: how many each agent holds). */
export function sqlSlotsOf(services: Services): SqlSlots {
  return guardsOf(services).slots;
}

/**
 * Agents' SQL over the index: within the budget of queries stopped at a limit (first, so that a
 * spent budget never waits for a slot), then in a fair slot.
 */
export const queryIndex: Handler<'query_index'> = async ({ services, principal }, input) => {
  const { budget, slots } = guardsOf(services);
  const settle = await budget.admit(principal.agentId);
  let stopped = false;
  try {
    const release = await slots.acquire(principal.agentId);
    try {
      return await runIndexQuery(services, principal, input);
    } finally {
      release();
    }
  } catch (error) {
    // A query stopped at its time limit, or at the memory one query may use (which on PGlite
    // costs a restart of the database thread), spends from the budget alike.
    stopped =
      error instanceof ServiceError && (error.code === 'sql_timeout' || ranOutOfMemory(error));
    throw error;
  } finally {
    await settle(stopped);
  }
};
