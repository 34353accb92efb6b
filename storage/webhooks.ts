import { agentIsSuspendedSql } from './agents/agent-suspensions.ts';
import type { Queryable } from './driver.ts';

/** One agent's webhook as stored (migration 031): the feed is its outbox. */
export interface WebhookRow {
  agentId: string;
  url: string;
  /** Exact event types sent; null: every type. */
  events: string[] | null;
  secretCipher: string;
  createdAt: Date;
  /** The last feed seq the endpoint took (or that `events` skipped). */
  deliveredSeq: number;
  attempts: number;
  nextAttemptAt: Date | null;
  failingSince: Date | null;
  lastError: string | null;
  disabledAt: Date | null;
}

interface Row extends Record<string, unknown> {
  agent_id: string;
  url: string;
  events: string[] | null;
  secret_cipher: string;
  created_at: Date;
  delivered_seq: number;
  attempts: number;
  next_attempt_at: Date | null;
  failing_since: Date | null;
  last_error: string | null;
  disabled_at: Date | null;
}

const COLUMNS = `agent_id, url, events, secret_cipher, created_at, delivered_seq, attempts,
  next_attempt_at, failing_since, last_error, disabled_at`;

function toWebhook(row: Row): WebhookRow {
  return {
    agentId: row.agent_id,
    url: row.url,
    events: row.events,
    secretCipher: row.secret_cipher,
    createdAt: row.created_at,
    deliveredSeq: Number(row.delivered_seq),
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    failingSince: row.failing_since,
    lastError: row.last_error,
    disabledAt: row.disabled_at,
  };
}

/**
 * Sets the agent's webhook (replacing one set before, and any failure or lease it had): from
 * the agent's newest change on, read in the same statement so no change falls between.
 */
export async function putWebhook(
  db: Queryable,
  webhook: {
    agentId: string;
    url: string;
    events: string[] | null;
    secretCipher: string;
    at: Date;
  },
): Promise<void> {
  await db.query(
    `insert into webhooks (agent_id, url, events, secret_cipher, created_at, delivered_seq)
     select $1, $2, $3::text[], $4, $5, h.last_seq from feed_heads h where h.agent_id = $1
     on conflict (agent_id) do update set url = excluded.url, events = excluded.events,
       secret_cipher = excluded.secret_cipher, created_at = excluded.created_at,
       delivered_seq = excluded.delivered_seq, attempts = 0, next_attempt_at = null,
       failing_since = null, last_error = null, disabled_at = null, leased_by = null,
       lease_until = null`,
    [webhook.agentId, webhook.url, webhook.events, webhook.secretCipher, webhook.at],
  );
}

export async function findWebhook(db: Queryable, agentId: string): Promise<WebhookRow | null> {
  const [row] = await db.query<Row>(`select ${COLUMNS} from webhooks where agent_id = $1`, [
    agentId,
  ]);
  return row ? toWebhook(row) : null;
}

/** True when there was one to delete. */
export async function deleteWebhook(db: Queryable, agentId: string): Promise<boolean> {
  const rows = await db.query('delete from webhooks where agent_id = $1 returning agent_id', [
    agentId,
  ]);
  return rows.length > 0;
}

/**
 * Locks the agent's feed head for the transaction and returns its newest seq: the next change
 * appended in this transaction is that seq + 1 (test_webhook answers its event id).
 */
export async function lockFeedHead(db: Queryable, agentId: string): Promise<number> {
  const [row] = await db.query<{ last_seq: number }>(
    'select last_seq from feed_heads where agent_id = $1 for update',
    [agentId],
  );
  if (!row) throw new Error(`no feed head for agent ${agentId}`);
  return Number(row.last_seq);
}

export async function eventIdAt(
  db: Queryable,
  agentId: string,
  seq: number,
): Promise<string | null> {
  const [row] = await db.query<{ event_id: string }>(
    'select event_id from changes where agent_id = $1 and seq = $2',
    [agentId, seq],
  );
  return row?.event_id ?? null;
}

/** Agents whose webhook is live (not disabled): whom a process listens for. */
export async function liveWebhookAgents(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ agent_id: string }>(
    'select agent_id from webhooks where disabled_at is null',
  );
  return rows.map((row) => row.agent_id);
}

/**
 * Live webhooks with work due at `now`: changes past `delivered_seq`, no retry waiting, no
 * lease held, agent not suspended.
 */
export async function dueWebhookAgents(db: Queryable, now: Date): Promise<string[]> {
  const rows = await db.query<{ agent_id: string }>(
    `select w.agent_id from webhooks w
       join feed_heads h on h.agent_id = w.agent_id
     where w.disabled_at is null and not ${agentIsSuspendedSql('w.agent_id')}
       and h.last_seq > w.delivered_seq
       and (w.next_attempt_at is null or w.next_attempt_at <= $1)
       and (w.lease_until is null or w.lease_until < $1)`,
    [now],
  );
  return rows.map((row) => row.agent_id);
}

/**
 * Takes the webhook's lease for `holder` until `leaseUntil` when it is live, due (no retry
 * waiting past `now`), unleased (or its lease ran out) and its agent not suspended. Returns the
 * row, or null when any of that does not hold: one process delivers to one endpoint at a time.
 */
export async function claimWebhook(
  db: Queryable,
  agentId: string,
  holder: string,
  now: Date,
  leaseUntil: Date,
): Promise<WebhookRow | null> {
  const [row] = await db.query<Row>(
    `update webhooks w set leased_by = $2, lease_until = $4
     where w.agent_id = $1 and w.disabled_at is null
       and (w.next_attempt_at is null or w.next_attempt_at <= $3)
       and (w.lease_until is null or w.lease_until < $3 or w.leased_by = $2)
       and not ${agentIsSuspendedSql('w.agent_id')}
     returning ${COLUMNS}`,
    [agentId, holder, now, leaseUntil],
  );
  return row ? toWebhook(row) : null;
}

/**
 * The endpoint took the changes through `seq` (or `events` skipped them): the cursor moves on,
 * any failure is forgotten and the lease extended, or let go with `release` (the feed is done:
 * one statement instead of two). False when the lease is no longer ours, the webhook was
 * replaced, deleted or disabled, or the agent was suspended: stop delivering.
 */
export async function markDelivered(
  db: Queryable,
  agentId: string,
  holder: string,
  expect: { createdAt: Date },
  seq: number,
  leaseUntil: Date,
  release = false,
): Promise<boolean> {
  const rows = await db.query(
    `update webhooks w set delivered_seq = greatest(w.delivered_seq, $3), attempts = 0,
       next_attempt_at = null, failing_since = null, last_error = null,
       leased_by = case when $6 then null else w.leased_by end,
       lease_until = case when $6 then null else $4::timestamptz end
     where w.agent_id = $1 and w.leased_by = $2 and w.created_at = $5 and w.disabled_at is null
       and not ${agentIsSuspendedSql('w.agent_id')}
     returning w.agent_id`,
    [agentId, holder, seq, leaseUntil, expect.createdAt, release],
  );
  return rows.length > 0;
}

/** An attempt failed: the next one is due at `nextAttemptAt`; the lease is let go. */
export async function markFailed(
  db: Queryable,
  agentId: string,
  holder: string,
  expect: { createdAt: Date },
  failure: { at: Date; nextAttemptAt: Date; error: string },
): Promise<{ attempts: number; failingSince: Date } | null> {
  const [row] = await db.query<{ attempts: number; failing_since: Date }>(
    `update webhooks set attempts = attempts + 1, next_attempt_at = $4,
       failing_since = coalesce(failing_since, $3), last_error = $5,
       leased_by = null, lease_until = null
     where agent_id = $1 and leased_by = $2 and created_at = $6 and disabled_at is null
     returning attempts, failing_since`,
    [agentId, holder, failure.at, failure.nextAttemptAt, failure.error, expect.createdAt],
  );
  return row ? { attempts: row.attempts, failingSince: row.failing_since } : null;
}

/** Disables the webhook (in the transaction that tells the agent); false when not ours now. */
export async function disableWebhook(
  db: Queryable,
  agentId: string,
  expect: { createdAt: Date },
  at: Date,
): Promise<boolean> {
  const rows = await db.query(
    `update webhooks set disabled_at = $2, next_attempt_at = null, leased_by = null,
       lease_until = null
     where agent_id = $1 and created_at = $3 and disabled_at is null returning agent_id`,
    [agentId, at, expect.createdAt],
  );
  return rows.length > 0;
}

/** Lets go of the lease (a pass ended); the next pass of any process may take it. */
export async function releaseWebhook(
  db: Queryable,
  agentId: string,
  holder: string,
): Promise<void> {
  await db.query(
    'update webhooks set leased_by = null, lease_until = null where agent_id = $1 and leased_by = $2',
    [agentId, holder],
  );
}
