import type { Queryable } from '../driver.ts';

/**
 * Each workspace's log (workspace_log, made by migrations/022_payments.sql): the lines its
 * members read with read_log, each written in the transaction of what it records (today the
 * payments' moves and the off-chain payments).
 */

export interface WorkspaceLogRow {
  /** Its place in the log: larger is newer (numbered across workspaces, so with gaps). */
  seq: number;
  workspaceId: string;
  at: Date;
  /** e.g. `payment.requested`, `payment.seen`, `offchain_payment.recorded`. */
  kind: string;
  /** The payment (on-chain or off-chain, as `kind` says) the line is about. */
  paymentId: string | null;
  data: unknown;
}

/** Adds a line to the workspace's log; its seq. */
export async function appendWorkspaceLog(
  tx: Queryable,
  line: Omit<WorkspaceLogRow, 'seq'>,
): Promise<number> {
  const [row] = await tx.query<{ seq: number }>(
    `insert into workspace_log (workspace_id, at, kind, payment_id, data)
     values ($1, $2, $3, $4, $5::text::jsonb) returning seq`,
    [line.workspaceId, line.at, line.kind, line.paymentId, JSON.stringify(line.data)],
  );
  if (!row) throw new Error('the log line was not kept');
  return row.seq;
}

/**
 * The workspace's log, newest first, from before `beforeSeq` (null: from the newest), at most
 * `limit` lines. A cursor page keys on the last line's seq: `{ kind: 'l', shape: ['int'] }`.
 */
export async function readWorkspaceLog(
  db: Queryable,
  workspaceId: string,
  beforeSeq: number | null,
  limit: number,
): Promise<WorkspaceLogRow[]> {
  const rows = await db.query<{
    seq: number;
    at: Date;
    kind: string;
    payment_id: string | null;
    data: unknown;
  }>(
    `select seq, at, kind, payment_id, data from workspace_log
     where workspace_id = $1 and ($2::bigint is null or seq < $2::bigint)
     order by seq desc limit $3`,
    [workspaceId, beforeSeq, limit],
  );
  return rows.map((r) => ({
    seq: r.seq,
    workspaceId,
    at: r.at,
    kind: r.kind,
    paymentId: r.payment_id,
    data: r.data,
  }));
}
