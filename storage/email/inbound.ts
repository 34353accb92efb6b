import type { Queryable } from '../driver.ts';

/**
 * One message the SMTP door took for one recipient (migration 025, mail_inbound). The key is the
 * Message-ID and the recipient (`<id@host> to@domain`): a message sent to two of our addresses
 * runs once for each, and a retried delivery finds its row and runs nothing again.
 */
export interface InboundRow {
  key: string;
  receivedAt: Date;
  recipient: string;
  fromAddress: string | null;
  envelopeFrom: string;
  remoteIp: string;
  auth: { spf: string; dkim: string; dmarc: string; aligned: boolean };
  agentId: string | null;
  subject: string;
  /** What became of it: `dispatching`, `dispatched`, `automatic`, `failed`. */
  outcome: string;
}

/**
 * Records the message; false when a row of that key is there already (a repeat: run nothing).
 * A row still `dispatching` since before `staleBefore` was left by a process that stopped
 * half-way (the sender got no answer, so it retries): the retry takes it over and runs.
 */
export async function insertInbound(
  db: Queryable,
  row: InboundRow,
  staleBefore: Date,
): Promise<boolean> {
  const rows = await db.query(
    `insert into mail_inbound (message_id, received_at, recipient, from_address, envelope_from,
       remote_ip, auth, agent_id, subject, outcome)
     values ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8, $9, $10)
     on conflict (message_id) do update
       set received_at = excluded.received_at, auth = excluded.auth,
         remote_ip = excluded.remote_ip, outcome = excluded.outcome
       where mail_inbound.outcome = 'dispatching' and mail_inbound.received_at < $11
     returning message_id`,
    [
      row.key,
      row.receivedAt,
      row.recipient,
      row.fromAddress,
      row.envelopeFrom,
      row.remoteIp,
      JSON.stringify(row.auth),
      row.agentId,
      row.subject,
      row.outcome,
      staleBefore,
    ],
  );
  return rows.length === 1;
}

export async function setInboundOutcome(
  db: Queryable,
  key: string,
  outcome: string,
): Promise<void> {
  await db.query(`update mail_inbound set outcome = $2 where message_id = $1`, [key, outcome]);
}

/** Forgets a message whose handling could not finish, so that the sender's retry runs it. */
export async function deleteInbound(db: Queryable, key: string): Promise<void> {
  await db.query(`delete from mail_inbound where message_id = $1`, [key]);
}
