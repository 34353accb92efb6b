import type { z } from 'zod';
import {
  ONLINE_WINDOW_SECONDS,
  RESPONSIVENESS_WINDOW_DAYS,
  type presence,
  type responsiveness,
} from '../../protocol/presence.ts';
import { NO_PRESENCE, readPresence, type PresenceRow } from '../../storage/presence/presence.ts';
import {
  NOTHING_MEASURED,
  readResponsiveness,
  type ResponsivenessRow,
} from '../../storage/presence/responsiveness.ts';
import type { Services } from '../kernel/services.ts';
import type { SeenHere } from './tracker.ts';

export type PresenceView = z.infer<typeof presence>;
export type ResponsivenessView = z.infer<typeof responsiveness>;

/** An agent's presence and responsiveness, as every view of an agent shows them. */
export interface AgentPresenceView {
  presence: PresenceView;
  responsiveness: ResponsivenessView;
}

const MINUTE_MS = 60_000;

/** A moment rounded down to its minute, as `last_seen_at` shows it. */
export function toMinute(ms: number): string {
  return new Date(Math.floor(ms / MINUTE_MS) * MINUTE_MS).toISOString();
}

/**
 * Presence from the table and from what this process sees: online while a connection is held
 * here, or when the last moment (the later of the table's and this process's) is within the
 * window. Hidden presence shows neither; the note is shown either way.
 */
export function presenceView(row: PresenceRow, here: SeenHere, nowMs: number): PresenceView {
  if (!row.visible) return { online: null, last_seen_at: null, note: row.note };
  const kept = row.lastSeenAt?.getTime() ?? null;
  const last =
    kept === null
      ? here.lastSeenMs
      : here.lastSeenMs === null
        ? kept
        : Math.max(kept, here.lastSeenMs);
  return {
    online: here.held > 0 || (last !== null && nowMs - last < ONLINE_WINDOW_SECONDS * 1000),
    last_seen_at: last === null ? null : toMinute(last),
    note: row.note,
  };
}

export function responsivenessView(row: ResponsivenessRow): ResponsivenessView {
  return {
    window_days: RESPONSIVENESS_WINDOW_DAYS,
    knocks_answered: row.knocksAnswered,
    knock_answer_median_seconds: row.knockAnswerMedianSeconds,
    replies: row.replies,
    reply_median_seconds: row.replyMedianSeconds,
  };
}

/**
 * The presence and responsiveness of each of `agentIds`, read in two statements sent at once;
 * answers a function for each agent's.
 */
export async function agentPresenceViews(
  services: Services,
  agentIds: readonly string[],
): Promise<(agentId: string) => AgentPresenceView> {
  const db = services.db();
  const [presenceRows, responsivenessRows] = await Promise.all([
    readPresence(db, agentIds),
    readResponsiveness(db, agentIds),
  ]);
  const nowMs = services.clock.now();
  const tracker = services.presence;
  return (agentId) => ({
    presence: presenceView(
      presenceRows.get(agentId) ?? NO_PRESENCE,
      tracker?.here(agentId) ?? { held: 0, lastSeenMs: null },
      nowMs,
    ),
    responsiveness: responsivenessView(responsivenessRows.get(agentId) ?? NOTHING_MEASURED),
  });
}

/** One agent's. */
export async function agentPresenceView(
  services: Services,
  agentId: string,
): Promise<AgentPresenceView> {
  return (await agentPresenceViews(services, [agentId]))(agentId);
}
