import { randomUUID } from 'node:crypto';
import { encodeCursor, type ChangeEvent } from '../protocol/events.ts';
import type { Queryable } from './driver.ts';

/** A change about to be recorded for one agent, inside the transaction of the write. */
export interface ChangeDraft {
  agentId: string;
  type: string;
  data: Record<string, unknown>;
  workspaceId?: string;
  actor?: { agent_id: string; name: string };
}

export interface StoredChangeRow {
  agentId: string;
  seq: number;
  event: ChangeEvent;
}

interface ChangeRow extends Record<string, unknown> {
  agent_id: string;
  seq: number;
  event_id: string;
  type: string;
  at: Date;
  workspace_id: string | null;
  actor: { agent_id: string; name: string } | null;
  data: Record<string, unknown>;
}

function toStored(row: ChangeRow): StoredChangeRow {
  const event: ChangeEvent = {
    event_id: row.event_id,
    cursor: encodeCursor(row.seq),
    type: row.type,
    at: row.at.toISOString(),
    data: row.data,
  };
  if (row.workspace_id) event.workspace_id = row.workspace_id;
  if (row.actor) event.actor = row.actor;
  return { agentId: row.agent_id, seq: row.seq, event };
}

/**
 * Numbers and inserts changes. Agents are taken in id order so that two writes touching the
 * same agents lock their feed heads in the same order and cannot deadlock.
 */
export async function appendChanges(
  tx: Queryable,
  drafts: readonly ChangeDraft[],
): Promise<StoredChangeRow[]> {
  const ordered = [...drafts].sort((a, b) =>
    a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0,
  );
  const stored: StoredChangeRow[] = [];
  for (const draft of ordered) {
    // Numbering and inserting in one statement: one round trip per agent concerned.
    const [row] = await tx.query<ChangeRow>(
      `with head as (
         update feed_heads set last_seq = last_seq + 1 where agent_id = $1 returning last_seq
       )
       insert into changes (agent_id, seq, event_id, type, workspace_id, actor, data)
       select $1, head.last_seq, $2, $3, $4, $5::text::jsonb, $6::text::jsonb from head
       returning agent_id, seq, event_id, type, at, workspace_id, actor, data`,
      [
        draft.agentId,
        randomUUID(),
        draft.type,
        draft.workspaceId ?? null,
        draft.actor ? JSON.stringify(draft.actor) : null,
        JSON.stringify(draft.data),
      ],
    );
    if (!row) throw new Error(`no feed head for agent ${draft.agentId}`);
    stored.push(toStored(row));
  }
  return stored;
}

export async function readChanges(
  db: Queryable,
  agentId: string,
  afterSeq: number,
  limit: number,
): Promise<StoredChangeRow[]> {
  const rows = await db.query<ChangeRow>(
    `select agent_id, seq, event_id, type, at, workspace_id, actor, data from changes
     where agent_id = $1 and seq > $2 order by seq limit $3`,
    [agentId, afterSeq, limit],
  );
  return rows.map(toStored);
}

export async function readFeedHead(
  db: Queryable,
  agentId: string,
): Promise<{ lastSeq: number; readSeq: number } | null> {
  const [row] = await db.query<{ last_seq: number; read_seq: number }>(
    'select last_seq, read_seq from feed_heads where agent_id = $1',
    [agentId],
  );
  return row ? { lastSeq: row.last_seq, readSeq: row.read_seq } : null;
}

/** The channel on which processes sharing a database tell each other of new changes. */
export const CHANGES_CHANNEL = 'agent_changes';

/**
 * Queues one notification per agent with its newest sequence number; PostgreSQL sends them
 * only when the transaction commits. The payload is `<sender> <agent_id> <seq>`.
 */
export async function notifyChanges(
  tx: Queryable,
  sender: string,
  stored: readonly StoredChangeRow[],
): Promise<void> {
  const newest = new Map<string, number>();
  for (const change of stored)
    newest.set(change.agentId, Math.max(newest.get(change.agentId) ?? 0, change.seq));
  if (newest.size === 0) return;
  const payloads = [...newest].map(([agentId, seq]) => `${sender} ${agentId} ${seq}`);
  await tx.query(
    `select pg_notify('${CHANGES_CHANNEL}', payload) from unnest($1::text[]) as payload`,
    [payloads],
  );
}
