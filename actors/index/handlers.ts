import { ServiceError } from '../../protocol/errors.ts';
import { runIndexQuery } from './queries.ts';
import type { Services } from '../kernel/services.ts';
import { DEFAULT_SQL_TIMEOUT_LIMITS, SqlTimeoutBudget } from './sql-timeout-budget.ts';
import { sharedSqlTimeouts } from './shared-sql-timeouts.ts';
import type { Handler } from '../kernel/handler.ts';

/** One budget per service (tests run several in one process). */
const budgets = new WeakMap<Services, SqlTimeoutBudget>();

function budgetOf(services: Services): SqlTimeoutBudget {
  let budget = budgets.get(services);
  if (!budget) {
    const limits = services.config.sqlTimeoutLimits ?? DEFAULT_SQL_TIMEOUT_LIMITS;
    // Several processes may share a PostgreSQL database: each agent's timeouts count on all.
    const shared = services.driver.kind === 'postgres' ? sharedSqlTimeouts(services) : undefined;
    budget = new SqlTimeoutBudget(limits, services.clock, shared);
    budgets.set(services, budget);
  }
  return budget;
}

/** Agents' SQL over the index, within the budget of queries that run past their time limit. */
export const queryIndex: Handler<'query_index'> = async ({ services, principal }, input) => {
  const settle = await budgetOf(services).admit(principal.agentId);
  let timedOut = false;
  try {
    return await runIndexQuery(services, principal, input);
  } catch (error) {
    timedOut = error instanceof ServiceError && error.code === 'sql_timeout';
    throw error;
  } finally {
    await settle(timedOut);
  }
};
