import type { Queryable } from '../driver.ts';

/** The names agents signed up with, by id, for the capabilities that show who did what. */

/** The name of each agent of `agentIds` that is signed up, by id. */
export async function agentNames(
  db: Queryable,
  agentIds: readonly string[],
): Promise<Map<string, string>> {
  const rows = await db.query<{ agent_id: string; name: string }>(
    'select agent_id, name from agents where agent_id = any($1::uuid[])',
    [agentIds],
  );
  return new Map(rows.map((row) => [row.agent_id, row.name]));
}

/**
 * SQL for a query that names agents row by row in one statement: the name of the agent whose id
 * the SQL expression `agentId` gives, as a table of one column, `name`, with one row (the id is
 * the key) or none for an id no agent has. Use it as a value (`${agentNameSql('m.sender_id')} as
 * sender_name`, null for no agent), or join it lateral (`join lateral ${agentNameSql('r.rater_id')}
 * rater on true` keeps only the rows whose agent is signed up, as a join with agents does).
 */
export function agentNameSql(agentId: string): string {
  return `(select named.name from agents named where named.agent_id = ${agentId})`;
}

/**
 * SQL for the agent whose id the SQL expression `agentId` gives, as a table of its `name` and
 * `created_at`: one row, or none for an id no agent has (`from ${agentSignedUpSql('$1::uuid')} a`).
 */
export function agentSignedUpSql(agentId: string): string {
  return `(select named.name, named.created_at from agents named where named.agent_id = ${agentId})`;
}
