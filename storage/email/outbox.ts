import type { Driver, Queryable } from '../driver.ts';

/** One queued message (migration 025, mail_outbox). */
export interface OutboxRow {
  mailId: string;
  messageId: string;
  kind: string;
  agentId: string | null;
  envelopeFrom: string;
  recipient: string;
  raw: Uint8Array;
  createdAt: Date;
}

/**
 * Queues a message; one with a Message-ID already queued is not queued again (false), so a
 * change pushed by two processes leaves once.
 */
export async function insertOutboxMail(db: Queryable, mail: OutboxRow): Promise<boolean> {
  const rows = await db.query(
    `insert into mail_outbox (mail_id, message_id, kind, agent_id, envelope_from, recipient, raw,
       created_at, next_attempt_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $8)
     on conflict (message_id) do nothing
     returning mail_id`,
    [
      mail.mailId,
      mail.messageId,
      mail.kind,
      mail.agentId,
      mail.envelopeFrom,
      mail.recipient,
      mail.raw,
      mail.createdAt,
    ],
  );
  return rows.length === 1;
}

/**
 * A message claimed for a send: its envelope and its attempt number. Its bytes are read one
 * message at a time (outboxRaw), so a pass holds in memory only what is in flight.
 */
export interface ClaimedMail {
  mailId: string;
  messageId: string;
  kind: string;
  envelopeFrom: string;
  recipient: string;
  createdAt: Date;
  attempts: number;
}

interface ClaimedRaw extends Record<string, unknown> {
  mail_id: string;
  message_id: string;
  kind: string;
  envelope_from: string;
  recipient: string;
  created_at: Date;
  attempts: number;
}

/** What a claim did: the messages to send now, and those too old to send late (failed). */
export interface Claim {
  due: ClaimedMail[];
  expired: number;
}

/**
 * Claims up to `limit` due messages in one transaction of its own, committed before any of
 * them is sent: each counts an attempt and moves `next_attempt_at` to `leaseUntil`, so no other
 * process (nor this one) takes it again until then; a crash before `markMailSent` sends it once
 * more after that, never more often than the claims. Rows another process holds locked are
 * skipped. A due message queued before `expireBefore` is not sent late: it fails as expired.
 */
export async function claimDueMail(
  db: Driver,
  claim: { now: Date; leaseUntil: Date; expireBefore: Date; limit: number },
): Promise<Claim> {
  return db.transaction(async (tx) => {
    const rows = await tx.query<ClaimedRaw>(
      `select mail_id, message_id, kind, envelope_from, recipient, created_at, attempts
       from mail_outbox
       where sent_at is null and failed_at is null and next_attempt_at <= $1
       order by next_attempt_at
       limit $2
       for update skip locked`,
      [claim.now, claim.limit],
    );
    const old = rows.filter((row) => row.created_at <= claim.expireBefore);
    const due = rows.filter((row) => row.created_at > claim.expireBefore);
    if (old.length > 0) {
      await tx.query(
        `update mail_outbox
         set failed_at = $2,
           last_error = 'expired: not sent within 24 hours of being queued'
             || coalesce(' (last error: ' || last_error || ')', '')
         where mail_id = any($1::uuid[])`,
        [old.map((row) => row.mail_id), claim.now],
      );
    }
    if (due.length > 0) {
      await tx.query(
        `update mail_outbox set attempts = attempts + 1, next_attempt_at = $2
         where mail_id = any($1::uuid[])`,
        [due.map((row) => row.mail_id), claim.leaseUntil],
      );
    }
    return {
      expired: old.length,
      due: due.map((row) => ({
        mailId: row.mail_id,
        messageId: row.message_id,
        kind: row.kind,
        envelopeFrom: row.envelope_from,
        recipient: row.recipient,
        createdAt: row.created_at,
        attempts: Number(row.attempts) + 1,
      })),
    };
  });
}

/** A queued message's bytes, as they go on the wire (null when the row is gone). */
export async function outboxRaw(db: Queryable, mailId: string): Promise<Uint8Array | null> {
  const rows = await db.query<{ raw: Uint8Array }>(
    'select raw from mail_outbox where mail_id = $1',
    [mailId],
  );
  return rows[0]?.raw ?? null;
}

/** The relay took it. */
export async function markMailSent(db: Queryable, mailId: string, now: Date): Promise<void> {
  await db.query(`update mail_outbox set sent_at = $2, last_error = null where mail_id = $1`, [
    mailId,
    now,
  ]);
}

/** A passing failure (4xx, no connection): try again at `nextAttemptAt`. */
export async function markMailRetry(
  db: Queryable,
  mailId: string,
  nextAttemptAt: Date,
  error: string,
): Promise<void> {
  await db.query(
    `update mail_outbox set next_attempt_at = $2, last_error = $3
     where mail_id = $1 and sent_at is null`,
    [mailId, nextAttemptAt, error],
  );
}

/** Given up: a permanent refusal (5xx), or a day of passing failures. */
export async function markMailFailed(
  db: Queryable,
  mailId: string,
  now: Date,
  error: string,
): Promise<void> {
  await db.query(
    `update mail_outbox set failed_at = $2, last_error = $3 where mail_id = $1 and sent_at is null`,
    [mailId, now, error],
  );
}

/** One queued message's delivery state, by Message-ID (without angle brackets). */
export interface OutboxState {
  attempts: number;
  nextAttemptAt: Date;
  sentAt: Date | null;
  failedAt: Date | null;
  lastError: string | null;
}

export async function outboxState(db: Queryable, messageId: string): Promise<OutboxState | null> {
  const rows = await db.query<{
    attempts: number;
    next_attempt_at: Date;
    sent_at: Date | null;
    failed_at: Date | null;
    last_error: string | null;
  }>(
    `select attempts, next_attempt_at, sent_at, failed_at, last_error
     from mail_outbox where message_id = $1`,
    [messageId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    sentAt: row.sent_at,
    failedAt: row.failed_at,
    lastError: row.last_error,
  };
}
