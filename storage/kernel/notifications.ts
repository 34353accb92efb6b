import type { Queryable } from '../driver.ts';

/** One NOTIFY: PostgreSQL delivers it to every listening process when the transaction commits. */
export interface Notification {
  channel: string;
  payload: string;
}

/**
 * Queues every notification of a transaction in one statement; PostgreSQL sends them only when
 * the transaction commits. `send` is the handle's `query`, or its `lastQuery` when this is the
 * transaction's last statement (the commit path's: the COMMIT's round trip carries it).
 */
export async function notifyAll(
  send: Queryable['query'],
  notifications: readonly Notification[],
): Promise<void> {
  if (notifications.length === 0) return;
  await send(
    'select pg_notify(channel, payload) from unnest($1::text[], $2::text[]) as n(channel, payload)',
    [notifications.map((n) => n.channel), notifications.map((n) => n.payload)],
  );
}
