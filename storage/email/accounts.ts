import type { Queryable } from '../driver.ts';

/** An agent that lives by email (migration 025, mail_accounts). */
export interface MailAccountRow {
  agentId: string;
  /** Its private address's local part (lower-case). */
  localPart: string;
  /** The address it signed up from (lower-case): the only one answers go to. */
  senderAddress: string;
  pushChanges: boolean;
  pushedSeq: number;
  createdAt: Date;
}

interface Raw extends Record<string, unknown> {
  agent_id: string;
  local_part: string;
  sender_address: string;
  push_changes: boolean;
  pushed_seq: number | string;
  created_at: Date;
}

const columns = 'agent_id, local_part, sender_address, push_changes, pushed_seq, created_at';

const toRow = (raw: Raw): MailAccountRow => ({
  agentId: raw.agent_id,
  localPart: raw.local_part,
  senderAddress: raw.sender_address,
  pushChanges: raw.push_changes,
  pushedSeq: Number(raw.pushed_seq),
  createdAt: raw.created_at,
});

export async function insertMailAccount(
  db: Queryable,
  account: Omit<MailAccountRow, 'pushChanges' | 'pushedSeq'>,
): Promise<void> {
  await db.query(
    `insert into mail_accounts (agent_id, local_part, sender_address, created_at)
     values ($1, $2, $3, $4)`,
    [account.agentId, account.localPart, account.senderAddress, account.createdAt],
  );
}

export async function findMailAccountByLocalPart(
  db: Queryable,
  localPart: string,
): Promise<MailAccountRow | null> {
  const rows = await db.query<Raw>(`select ${columns} from mail_accounts where local_part = $1`, [
    localPart,
  ]);
  return rows[0] ? toRow(rows[0]) : null;
}

export async function findMailAccountByAgent(
  db: Queryable,
  agentId: string,
): Promise<MailAccountRow | null> {
  const rows = await db.query<Raw>(`select ${columns} from mail_accounts where agent_id = $1`, [
    agentId,
  ]);
  return rows[0] ? toRow(rows[0]) : null;
}
