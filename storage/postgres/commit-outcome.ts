import type postgres from 'postgres';
import type { StorageUnavailableError } from '../database-error.ts';
import { StorageOutcomeUnknownError } from '../database-error.ts';

/**
 * How long the driver keeps asking whether a transaction whose COMMIT lost its connection
 * committed. A backend that lost its client ends its transaction within milliseconds (killed,
 * or it sees the closed socket), but asking needs a new connection: the pool's reconnect
 * backoff (up to 1 s) and, on a loaded machine, seconds to connect (3 s was seen too short).
 * Past it, the answer is `outcome unknown`, never a guess.
 */
const OUTCOME_DEADLINE_MS = 10_000;

/**
 * The transaction's id, asked as its last statement before COMMIT: null when it wrote nothing
 * (PostgreSQL assigns an id at the first write), so reads cost no id. With its backend's pid,
 * to end a backend whose COMMIT stalled.
 */
export const TRANSACTION_ID_SQL =
  'select pg_current_xact_id_if_assigned()::text as xid, pg_backend_pid() as pid';

/** What TRANSACTION_ID_SQL answers. */
export interface TransactionIdRow {
  xid: string | null;
  pid: number;
}

type Status = 'committed' | 'aborted' | 'in progress' | null;

/**
 * What a transaction whose COMMIT lost its connection (`lost`) really did, asked on a fresh
 * connection with pg_xact_status: resolves when it committed (the caller answers success),
 * rejects with `lost` when it did not (nothing was written: true), and with
 * StorageOutcomeUnknownError when the database cannot tell or cannot be asked in time.
 * A backend still `in progress` has not noticed its client is gone: asked again until it ends.
 */
export async function learnCommitOutcome(
  sql: postgres.Sql,
  xid: string,
  lost: StorageUnavailableError,
  deadlineMs = OUTCOME_DEADLINE_MS,
): Promise<void> {
  const until = performance.now() + deadlineMs;
  let last = lost.reason;
  for (let attempt = 0; performance.now() < until; attempt++) {
    let status: Status;
    try {
      const [row] = await withDeadline(
        sql.unsafe<{ status: Status }[]>('select pg_xact_status($1::xid8) as status', [xid]),
        until - performance.now(),
      );
      status = row?.status ?? null;
    } catch {
      // The database is still out of reach: ask again until the deadline.
      status = 'in progress';
      last = 'the database could not be asked';
    }
    if (status === 'committed') return;
    if (status === 'aborted') throw lost;
    // null: the id is too old for the commit log (never for an id taken a moment ago).
    if (status === null) throw new StorageOutcomeUnknownError('no status for the transaction');
    if (status === 'in progress' && last === lost.reason) last = 'still in progress';
    await pause(Math.min(10 * 2 ** attempt, 200, Math.max(0, until - performance.now())));
  }
  throw new StorageOutcomeUnknownError(last);
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function withDeadline<T>(step: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      step,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer')), Math.max(0, ms));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
