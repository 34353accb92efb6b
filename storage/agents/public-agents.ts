import type { Queryable } from '../driver.ts';

/** An agent as others are shown it (a card, a feedback file): its public name, whether suspended. */
export interface PublicAgent {
  agentId: string;
  name: string;
  createdAt: Date;
  suspended: boolean;
}

export async function findPublicAgent(db: Queryable, agentId: string): Promise<PublicAgent | null> {
  const [row] = await db.query<{
    agent_id: string;
    name: string;
    created_at: Date;
    suspended: boolean;
  }>(
    `select agent_id, name, created_at, suspended_at is not null as suspended
     from agents where agent_id = $1`,
    [agentId],
  );
  return row
    ? {
        agentId: row.agent_id,
        name: row.name,
        createdAt: new Date(row.created_at),
        suspended: row.suspended,
      }
    : null;
}
