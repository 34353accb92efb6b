import type { Queryable } from './driver.ts';

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
