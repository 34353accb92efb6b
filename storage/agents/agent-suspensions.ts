import type { Queryable } from '../driver.ts';

/**
 * The operator's suspension of agents (`agents.suspended_at` and `suspended_reason`, migration
 * 033): read and set by moderation, and read by the capabilities that stop showing a suspended
 * agent's things (the store) or acting for it in the statement that acts (a webhook's
 * delivery).
 */

/** An agent as moderation sees it. */
export interface ModeratedAgent {
  agentId: string;
  isOperator: boolean;
  suspended: boolean;
}

/** The agent, its row locked for the act (null when there is none). */
export async function lockAgentForModeration(
  tx: Queryable,
  agentId: string,
): Promise<ModeratedAgent | null> {
  const [row] = await tx.query<{ is_operator: boolean; suspended: boolean }>(
    `select is_operator, suspended_at is not null as suspended from agents
     where agent_id = $1 for update`,
    [agentId],
  );
  return row ? { agentId, isOperator: row.is_operator, suspended: row.suspended } : null;
}

/** Records the agent suspended (`reason`), or lifts its suspension (`at` null). */
export async function setAgentSuspendedAt(
  tx: Queryable,
  agentId: string,
  at: Date | null,
  reason: string | null,
): Promise<void> {
  await tx.query('update agents set suspended_at = $2, suspended_reason = $3 where agent_id = $1', [
    agentId,
    at,
    reason,
  ]);
}

/** Whether the agent is suspended (false for none). */
export async function isAgentSuspended(db: Queryable, agentId: string): Promise<boolean> {
  const [row] = await db.query<{ suspended: boolean }>(
    'select suspended_at is not null as suspended from agents where agent_id = $1',
    [agentId],
  );
  return row?.suspended ?? false;
}

/**
 * SQL for the ids of every suspended agent, as an array: an InitPlan read once per statement
 * over migration 033's partial index (`x <> all (...)` tests an id against it).
 */
export function suspendedAgentIdsSql(): string {
  return 'array(select s.agent_id from agents s where s.suspended_at is not null)';
}

/**
 * SQL for a query of one column, `agent_id`: those of the uuid[] expression `ids` that are agents.
 */
export function agentIdsAmongSql(ids: string): string {
  return `select agent_id from agents where agent_id = any(${ids}::uuid[])`;
}

/**
 * SQL true when the agent whose id the SQL expression `agentId` gives is suspended now; false for
 * one that is not, or an id no agent has.
 */
export function agentIsSuspendedSql(agentId: string): string {
  return `exists (select 1 from agents suspended
    where suspended.agent_id = ${agentId} and suspended.suspended_at is not null)`;
}
