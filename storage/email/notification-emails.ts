import type { Queryable } from '../driver.ts';

/**
 * The person's notification address of each agent (`notification_emails`, migration 025): its
 * status, the SHA-256 of its code and link token, its unsubscribe key, and how far the digests
 * have read the agent's changes.
 */
export interface NotificationEmailRow {
  agentId: string;
  email: string;
  status: 'pending' | 'confirmed' | 'voided' | 'unsubscribed';
  /** Hex SHA-256 of the 6-digit code; null once it can no longer be used. */
  codeHash: string | null;
  /** Hex SHA-256 of the link token; kept after confirming, so that opening it again answers. */
  linkTokenHash: string | null;
  wrongCodes: number;
  unsubscribeKey: string;
  requestedAt: Date;
  confirmedAt: Date | null;
  digestedSeq: number;
  lastDigestAt: Date | null;
}

interface Raw extends Record<string, unknown> {
  agent_id: string;
  email: string;
  status: NotificationEmailRow['status'];
  code_hash: string | null;
  link_token_hash: string | null;
  wrong_codes: number;
  unsubscribe_key: string;
  requested_at: Date;
  confirmed_at: Date | null;
  digested_seq: number | string;
  last_digest_at: Date | null;
}

const COLUMNS = `agent_id, email, status, code_hash, link_token_hash, wrong_codes, unsubscribe_key,
  requested_at, confirmed_at, digested_seq, last_digest_at`;

const toRow = (raw: Raw): NotificationEmailRow => ({
  agentId: raw.agent_id,
  email: raw.email,
  status: raw.status,
  codeHash: raw.code_hash,
  linkTokenHash: raw.link_token_hash,
  wrongCodes: raw.wrong_codes,
  unsubscribeKey: raw.unsubscribe_key,
  requestedAt: raw.requested_at,
  confirmedAt: raw.confirmed_at,
  digestedSeq: Number(raw.digested_seq),
  lastDigestAt: raw.last_digest_at,
});

async function one(db: Queryable, where: string, value: string, lock: boolean) {
  const [raw] = await db.query<Raw>(
    `select ${COLUMNS} from notification_emails where ${where} = $1${lock ? ' for update' : ''}`,
    [value],
  );
  return raw ? toRow(raw) : null;
}

export function findNotificationEmail(
  db: Queryable,
  agentId: string,
  { lock = false } = {},
): Promise<NotificationEmailRow | null> {
  return one(db, 'agent_id', agentId, lock);
}

/** The row whose confirmation link token hashes to `hash`, locked for the write that follows. */
export function lockNotificationEmailByLink(
  tx: Queryable,
  hash: string,
): Promise<NotificationEmailRow | null> {
  return one(tx, 'link_token_hash', hash, true);
}

export function findNotificationEmailByUnsubscribeKey(
  db: Queryable,
  key: string,
  { lock = false } = {},
): Promise<NotificationEmailRow | null> {
  return one(db, 'unsubscribe_key', key, lock);
}

/** Writes the whole row: a new address, or the next state of the one there. */
export async function saveNotificationEmail(
  tx: Queryable,
  row: NotificationEmailRow,
): Promise<void> {
  await tx.query(
    `insert into notification_emails (${COLUMNS}, version)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0)
     on conflict (agent_id) do update set
       email = excluded.email, status = excluded.status, code_hash = excluded.code_hash,
       link_token_hash = excluded.link_token_hash, wrong_codes = excluded.wrong_codes,
       unsubscribe_key = excluded.unsubscribe_key, requested_at = excluded.requested_at,
       confirmed_at = excluded.confirmed_at, digested_seq = excluded.digested_seq,
       last_digest_at = excluded.last_digest_at,
       version = notification_emails.version + 1`,
    [
      row.agentId,
      row.email,
      row.status,
      row.codeHash,
      row.linkTokenHash,
      row.wrongCodes,
      row.unsubscribeKey,
      row.requestedAt,
      row.confirmedAt,
      row.digestedSeq,
      row.lastDigestAt,
    ],
  );
}

/**
 * Confirmation emails queued for the agent since `since` (in the outbox, whose rows are kept):
 * what set_notification_email's hourly limit counts.
 */
export async function confirmationsSentSince(
  db: Queryable,
  agentId: string,
  kind: string,
  since: Date,
): Promise<Date[]> {
  const rows = await db.query<{ created_at: Date }>(
    `select created_at from mail_outbox where agent_id = $1 and kind = $2 and created_at > $3
     order by created_at`,
    [agentId, kind, since],
  );
  return rows.map((row) => row.created_at);
}

/** Agents whose confirmed address had no digest since `before` (or none yet), oldest first. */
export async function agentsDueForDigest(
  db: Queryable,
  before: Date,
  limit: number,
): Promise<string[]> {
  const rows = await db.query<{ agent_id: string }>(
    `select agent_id from notification_emails
     where status = 'confirmed' and (last_digest_at is null or last_digest_at <= $1)
     order by last_digest_at nulls first, agent_id limit $2`,
    [before, limit],
  );
  return rows.map((row) => row.agent_id);
}

/** The digest read the changes up to `seq`; `sentAt` when it sent one (null: nothing to tell). */
export async function markDigested(
  tx: Queryable,
  agentId: string,
  seq: number,
  sentAt: Date | null,
): Promise<void> {
  await tx.query(
    `update notification_emails
     set digested_seq = greatest(digested_seq, $2),
         last_digest_at = coalesce($3, last_digest_at), version = version + 1
     where agent_id = $1`,
    [agentId, seq, sentAt],
  );
}
