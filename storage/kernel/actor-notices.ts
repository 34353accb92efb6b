import type { Queryable } from '../driver.ts';
import { notifyAll, type Notification } from './notifications.ts';

/**
 * The channel on which processes sharing a database tell each other that an actor's row moved
 * to a new version (their copies are stale), or that an agent's tokens changed (their token
 * caches must forget it). The payload is `<sender> <kind> <id> <version>`.
 */
export const ACTOR_CHANNEL = 'agent_service_actors';

/** The notice kind for "this agent's tokens changed"; its version is unused. */
export const TOKEN_NOTICE_KIND = 'token';

export interface ActorNoticeRow {
  kind: string;
  id: string;
  version: number;
}

/** Queues the notices; PostgreSQL sends them only when the transaction commits. */
export async function notifyActors(
  tx: Queryable,
  sender: string,
  notices: readonly ActorNoticeRow[],
): Promise<void> {
  await notifyAll((text, params) => tx.query(text, params), actorNotifications(sender, notices));
}

/** The notices as notifications, for notifyAll (notifications.ts). */
export function actorNotifications(
  sender: string,
  notices: readonly ActorNoticeRow[],
): Notification[] {
  return notices.map((n) => ({
    channel: ACTOR_CHANNEL,
    payload: `${sender} ${n.kind} ${n.id} ${n.version}`,
  }));
}

export function parseActorNotice(payload: string): (ActorNoticeRow & { sender: string }) | null {
  const [sender, kind, id, version] = payload.split(' ');
  if (!sender || !kind || !id || version === undefined) return null;
  return { sender, kind, id, version: Number(version) };
}
