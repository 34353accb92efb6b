import type { Queryable } from '../driver.ts';

export interface AgentRow {
  agentId: string;
  name: string;
  isOperator: boolean;
  createdAt: Date;
  /** The agent machine's persisted snapshot; null until its first command changed it. */
  machine: unknown;
  /** Optimistic concurrency: every command that writes the row moves it on by one. */
  version: number;
}

interface Raw extends Record<string, unknown> {
  agent_id: string;
  name: string;
  is_operator: boolean;
  created_at: Date;
  machine: unknown;
  version: number;
}

const columns = 'agent_id, name, is_operator, created_at, machine, version';
const toRow = (raw: Raw): AgentRow => ({
  agentId: raw.agent_id,
  name: raw.name,
  isOperator: raw.is_operator,
  createdAt: raw.created_at,
  machine: raw.machine,
  version: raw.version,
});

export async function insertAgent(
  tx: Queryable,
  agent: { agentId: string; name: string; isOperator?: boolean },
): Promise<AgentRow> {
  // Its tokens are rows of agent_tokens (storage/kernel/tokens.ts), written beside this one.
  const [raw] = await tx.query<Raw>(
    `insert into agents (agent_id, name, is_operator) values ($1, $2, $3)
     returning ${columns}`,
    [agent.agentId, agent.name, agent.isOperator ?? false],
  );
  await tx.query('insert into feed_heads (agent_id) values ($1)', [agent.agentId]);
  return toRow(raw as Raw);
}

/**
 * The agent with its feed head, as an AgentActor loads it. The remembered place lives in the
 * machine's snapshot; `feed_heads.read_seq` is where 0.30.0 kept it, read only for agents
 * whose machine has not been saved since.
 */
export async function findAgent(
  db: Queryable,
  agentId: string,
): Promise<(AgentRow & { lastSeq: number; readSeq: number }) | null> {
  const [raw] = await db.query<Raw & { last_seq: number; read_seq: number }>(
    `select a.agent_id, a.name, a.is_operator, a.created_at, a.machine, a.version,
            h.last_seq, h.read_seq
     from agents a join feed_heads h using (agent_id) where a.agent_id = $1`,
    [agentId],
  );
  return raw ? { ...toRow(raw), lastSeq: raw.last_seq, readSeq: raw.read_seq } : null;
}

/**
 * Writes the agent machine's snapshot if the row is still at `version`. Returns the row's new
 * version, or null when another writer moved it on.
 */
export async function saveAgentState(
  tx: Queryable,
  agentId: string,
  version: number,
  machine: unknown,
): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    `update agents set machine = $3::text::jsonb, version = version + 1
     where agent_id = $1 and version = $2 returning version`,
    [agentId, version, JSON.stringify(machine)],
  );
  return row?.version ?? null;
}

/** Locks the agent's row for the rest of the transaction; its version, or null if none. */
export async function lockAgent(tx: Queryable, agentId: string): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    'select version from agents where agent_id = $1 for update',
    [agentId],
  );
  return row?.version ?? null;
}

export async function findOperator(db: Queryable): Promise<AgentRow | null> {
  const [raw] = await db.query<Raw>(`select ${columns} from agents where is_operator`);
  return raw ? toRow(raw) : null;
}
