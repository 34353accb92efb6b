import type { Queryable } from '../driver.ts';

/** Presence as kept (migration 046): when last seen, whether shown, the agent's note. */
export interface PresenceRow {
  lastSeenAt: Date | null;
  visible: boolean;
  note: string | null;
}

/** What an agent without a row has: never seen since presence was kept, shown, no note. */
export const NO_PRESENCE: PresenceRow = Object.freeze({
  lastSeenAt: null,
  visible: true,
  note: null,
});

/**
 * Notes that each agent was seen at its moment, in one statement. A moment only ever moves
 * forward: a process that writes late (its batch held up) never takes an agent back in time.
 */
export async function recordSeen(
  db: Queryable,
  seen: readonly { agentId: string; at: Date }[],
): Promise<void> {
  if (seen.length === 0) return;
  await db.query(
    `insert into agent_presence (agent_id, last_seen_at)
     select * from unnest($1::uuid[], $2::timestamptz[])
     on conflict (agent_id) do update set last_seen_at =
       greatest(agent_presence.last_seen_at, excluded.last_seen_at)`,
    [seen.map((one) => one.agentId), seen.map((one) => one.at.toISOString())],
  );
}

/** The presence of each of `agentIds` that has a row. */
export async function readPresence(
  db: Queryable,
  agentIds: readonly string[],
): Promise<Map<string, PresenceRow>> {
  const found = new Map<string, PresenceRow>();
  if (agentIds.length === 0) return found;
  const rows = await db.query<{
    agent_id: string;
    last_seen_at: Date | null;
    visible: boolean;
    note: string | null;
  }>(
    'select agent_id, last_seen_at, visible, note from agent_presence where agent_id = any($1::uuid[])',
    [[...new Set(agentIds)]],
  );
  for (const row of rows) {
    found.set(row.agent_id, {
      lastSeenAt: row.last_seen_at,
      visible: row.visible,
      note: row.note,
    });
  }
  return found;
}

/** Sets what is given of an agent's presence settings; answers them as they now are. */
export async function setPresenceSettings(
  tx: Queryable,
  agentId: string,
  settings: { visible?: boolean | undefined; note?: string | null | undefined },
): Promise<{ visible: boolean; note: string | null }> {
  const [row] = await tx.query<{ visible: boolean; note: string | null }>(
    `insert into agent_presence (agent_id, visible, note)
     values ($1, coalesce($2::boolean, true), $4)
     on conflict (agent_id) do update set
       visible = coalesce($2::boolean, agent_presence.visible),
       note = case when $3::boolean then $4 else agent_presence.note end
     returning visible, note`,
    [agentId, settings.visible ?? null, settings.note !== undefined, settings.note ?? null],
  );
  return { visible: row?.visible ?? true, note: row?.note ?? null };
}

/** The agents that show their presence and were seen at `since` or later (the store's `online=1`). */
export async function agentsSeenSince(db: Queryable, since: Date): Promise<string[]> {
  const rows = await db.query<{ agent_id: string }>(
    'select agent_id from agent_presence where visible and last_seen_at >= $1',
    [since],
  );
  return rows.map((row) => row.agent_id);
}
