import { encodeCursor, type ChangeEvent } from '../../protocol/events.ts';
import { readChanges, type StoredChangeRow } from '../../storage/kernel/changes.ts';
import type { Services } from '../kernel/services.ts';

export interface FeedPage {
  changes: ChangeEvent[];
  cursor: string;
}

/**
 * Reads the agent's feed after `after` (a sequence number) or, without it, after its
 * remembered place, and moves the place on to the end of the page: one command, so the read
 * and the move see the same place, and a copy of the agent that another process has moved on
 * is caught by its version and reloaded rather than replaying what was already read.
 */
export async function readFeedPage(
  services: Services,
  agentId: string,
  after: number | undefined,
  limit: number,
): Promise<FeedPage> {
  const page = await services.agents.command(agentId, async (agent, tx) => {
    const from = after ?? agent.readSeq;
    const rows = await readChanges(tx, agentId, from, limit);
    const last = rows.at(-1)?.seq ?? from;
    return {
      result: { changes: rows.map((row) => row.event), cursor: encodeCursor(last) },
      next: agent.propose({ type: 'feed.read', seq: last }),
    };
  });
  if (!page) throw new Error(`agent ${agentId} vanished`);
  return page;
}

/** Moves the remembered place forward to `seq` (never back); returns the place now kept. */
export async function markRead(services: Services, agentId: string, seq: number): Promise<number> {
  const place = await services.agents.command(agentId, async (agent) => {
    const next = agent.propose({ type: 'feed.read', seq });
    return { result: next ? next.context.readSeq : agent.readSeq, next };
  });
  if (place === null) throw new Error(`agent ${agentId} vanished`);
  return place;
}

/** The changes after `seq`, without moving anything: what a socket replays. */
export function changesAfter(
  services: Services,
  agentId: string,
  seq: number,
  limit: number,
): Promise<StoredChangeRow[]> {
  return readChanges(services.db(), agentId, seq, limit);
}
