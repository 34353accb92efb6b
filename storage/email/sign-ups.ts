import type { Queryable } from '../driver.ts';

/** A sign-up by email waiting for its code (migration 025, mail_signups). */
export interface MailSignUpRow {
  signupId: string;
  senderAddress: string;
  name: string;
  codeHash: string;
  wrongCodes: number;
  status: 'pending' | 'done' | 'voided';
  createdAt: Date;
  expiresAt: Date;
  agentId: string | null;
}

interface Raw extends Record<string, unknown> {
  signup_id: string;
  sender_address: string;
  name: string;
  code_hash: string;
  wrong_codes: number;
  status: MailSignUpRow['status'];
  created_at: Date;
  expires_at: Date;
  agent_id: string | null;
}

const columns =
  'signup_id, sender_address, name, code_hash, wrong_codes, status, created_at, expires_at, agent_id';

const toRow = (raw: Raw): MailSignUpRow => ({
  signupId: raw.signup_id,
  senderAddress: raw.sender_address,
  name: raw.name,
  codeHash: raw.code_hash,
  wrongCodes: Number(raw.wrong_codes),
  status: raw.status,
  createdAt: raw.created_at,
  expiresAt: raw.expires_at,
  agentId: raw.agent_id,
});

/** A new sign-up (`pending`), or a `voided` row that marks a refusal over the hourly limit. */
export async function insertMailSignUp(
  db: Queryable,
  row: Omit<MailSignUpRow, 'wrongCodes' | 'agentId'>,
): Promise<void> {
  await db.query(
    `insert into mail_signups (signup_id, sender_address, name, code_hash, status, created_at, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7)`,
    [
      row.signupId,
      row.senderAddress,
      row.name,
      row.codeHash,
      row.status,
      row.createdAt,
      row.expiresAt,
    ],
  );
}

/** Sign-ups `senderAddress` started since `since`: what its hourly limit counts. */
export async function countMailSignUpsSince(
  db: Queryable,
  senderAddress: string,
  since: Date,
): Promise<number> {
  const rows = await db.query<{ n: number | string }>(
    `select count(*) as n from mail_signups where sender_address = $1 and created_at >= $2`,
    [senderAddress, since],
  );
  return Number(rows[0]?.n ?? 0);
}

/** The newest pending, unexpired sign-up of `senderAddress`. */
export async function pendingMailSignUp(
  db: Queryable,
  senderAddress: string,
  now: Date,
): Promise<MailSignUpRow | null> {
  const rows = await db.query<Raw>(
    `select ${columns} from mail_signups
     where sender_address = $1 and status = 'pending' and expires_at > $2
     order by created_at desc limit 1`,
    [senderAddress, now],
  );
  return rows[0] ? toRow(rows[0]) : null;
}

/** Claims a pending sign-up for its one run (only one caller gets true). */
export async function claimMailSignUp(db: Queryable, signupId: string): Promise<boolean> {
  const rows = await db.query(
    `update mail_signups set status = 'done' where signup_id = $1 and status = 'pending'
     returning signup_id`,
    [signupId],
  );
  return rows.length === 1;
}

/** Counts a wrong code; the fifth voids the sign-up. Returns the count. */
export async function countWrongMailSignUpCode(
  db: Queryable,
  signupId: string,
  voidAt: number,
): Promise<number> {
  const rows = await db.query<{ wrong_codes: number }>(
    `update mail_signups set wrong_codes = wrong_codes + 1,
       status = case when wrong_codes + 1 >= $2 then 'voided' else status end
     where signup_id = $1 returning wrong_codes`,
    [signupId, voidAt],
  );
  return Number(rows[0]?.wrong_codes ?? 0);
}

export async function setMailSignUpAgent(
  db: Queryable,
  signupId: string,
  agentId: string,
): Promise<void> {
  await db.query(`update mail_signups set agent_id = $2 where signup_id = $1`, [signupId, agentId]);
}
