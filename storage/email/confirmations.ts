import type { Queryable } from '../driver.ts';

/** A binding command sent by email, waiting for its confirmation (migration 025). */
export interface MailConfirmationRow {
  confirmationId: string;
  tokenHash: string;
  agentId: string;
  operation: string;
  input: Record<string, unknown>;
  status: 'pending' | 'done' | 'expired';
  createdAt: Date;
  expiresAt: Date;
  doneAt: Date | null;
  answer: unknown;
}

interface Raw extends Record<string, unknown> {
  confirmation_id: string;
  token_hash: string;
  agent_id: string;
  operation: string;
  input: Record<string, unknown> | string;
  status: MailConfirmationRow['status'];
  created_at: Date;
  expires_at: Date;
  done_at: Date | null;
  answer: unknown;
}

const columns =
  'confirmation_id, token_hash, agent_id, operation, input, status, created_at, expires_at, done_at, answer';

const json = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

const toRow = (raw: Raw): MailConfirmationRow => ({
  confirmationId: raw.confirmation_id,
  tokenHash: raw.token_hash,
  agentId: raw.agent_id,
  operation: raw.operation,
  input: json(raw.input) as Record<string, unknown>,
  status: raw.status,
  createdAt: raw.created_at,
  expiresAt: raw.expires_at,
  doneAt: raw.done_at,
  answer: raw.answer === null ? null : json(raw.answer),
});

export async function insertMailConfirmation(
  db: Queryable,
  row: Pick<
    MailConfirmationRow,
    'confirmationId' | 'tokenHash' | 'agentId' | 'operation' | 'input' | 'createdAt' | 'expiresAt'
  >,
): Promise<void> {
  await db.query(
    `insert into mail_confirmations
       (confirmation_id, token_hash, agent_id, operation, input, status, created_at, expires_at)
     values ($1, $2, $3, $4, $5, 'pending', $6, $7)`,
    [
      row.confirmationId,
      row.tokenHash,
      row.agentId,
      row.operation,
      JSON.stringify(row.input),
      row.createdAt,
      row.expiresAt,
    ],
  );
}

export async function findMailConfirmationByToken(
  db: Queryable,
  tokenHash: string,
): Promise<MailConfirmationRow | null> {
  const rows = await db.query<Raw>(
    `select ${columns} from mail_confirmations where token_hash = $1`,
    [tokenHash],
  );
  return rows[0] ? toRow(rows[0]) : null;
}

export async function findMailConfirmation(
  db: Queryable,
  confirmationId: string,
): Promise<MailConfirmationRow | null> {
  const rows = await db.query<Raw>(
    `select ${columns} from mail_confirmations where confirmation_id = $1`,
    [confirmationId],
  );
  return rows[0] ? toRow(rows[0]) : null;
}

/**
 * Claims a pending, unexpired confirmation for its one run: only one caller gets the row back,
 * before the command runs, so a repeated or concurrent confirmation never runs it twice (a crash
 * mid-run leaves it done without an answer: at most once).
 */
export async function claimMailConfirmation(
  db: Queryable,
  confirmationId: string,
  now: Date,
): Promise<boolean> {
  const rows = await db.query(
    `update mail_confirmations set status = 'done', done_at = $2
     where confirmation_id = $1 and status = 'pending' and expires_at > $2
     returning confirmation_id`,
    [confirmationId, now],
  );
  return rows.length === 1;
}

/** A new link token for a pending confirmation (the old link stops working). */
export async function replaceMailConfirmationToken(
  db: Queryable,
  confirmationId: string,
  tokenHash: string,
): Promise<void> {
  await db.query(
    `update mail_confirmations set token_hash = $2 where confirmation_id = $1 and status = 'pending'`,
    [confirmationId, tokenHash],
  );
}

export async function setMailConfirmationAnswer(
  db: Queryable,
  confirmationId: string,
  answer: unknown,
): Promise<void> {
  await db.query(`update mail_confirmations set answer = $2 where confirmation_id = $1`, [
    confirmationId,
    JSON.stringify(answer ?? null),
  ]);
}
