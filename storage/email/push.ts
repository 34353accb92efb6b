import type { Queryable } from '../driver.ts';

/**
 * Changes pushed by email (mail_accounts.push_changes and pushed_seq, migration 025). Kept apart
 * from storage/email/accounts.ts, which another part of the email capability owns.
 */

/** Switches pushing; on, it starts after `fromSeq` (older changes are read with `changes`). */
export async function setMailPushing(
  db: Queryable,
  agentId: string,
  push: boolean,
  fromSeq: number,
): Promise<boolean> {
  const rows = await db.query(
    `update mail_accounts
     set push_changes = $2, pushed_seq = case when $2 then greatest(pushed_seq, $3) else pushed_seq end
     where agent_id = $1 returning agent_id`,
    [agentId, push, fromSeq],
  );
  return rows.length === 1;
}

/** The agents whose changes are pushed. */
export async function pushingAgents(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ agent_id: string }>(
    'select agent_id from mail_accounts where push_changes',
  );
  return rows.map((row) => row.agent_id);
}

/** Where pushing stands for an agent: its sender address and the last change sent. */
export async function mailPushState(
  db: Queryable,
  agentId: string,
): Promise<{ senderAddress: string; pushedSeq: number; push: boolean } | null> {
  const rows = await db.query<{
    sender_address: string;
    pushed_seq: number | string;
    push_changes: boolean;
  }>('select sender_address, pushed_seq, push_changes from mail_accounts where agent_id = $1', [
    agentId,
  ]);
  const row = rows[0];
  return row
    ? {
        senderAddress: row.sender_address,
        pushedSeq: Number(row.pushed_seq),
        push: row.push_changes,
      }
    : null;
}

/** Moves the last change sent on (never back: two processes may push the same changes). */
export async function markPushed(db: Queryable, agentId: string, seq: number): Promise<void> {
  await db.query(
    'update mail_accounts set pushed_seq = greatest(pushed_seq, $2) where agent_id = $1',
    [agentId, seq],
  );
}
