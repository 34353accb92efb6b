import {
  DatabaseError,
  StorageOutcomeUnknownError,
  StorageUnavailableError,
} from '../database-error.ts';

/** Codes postgres.js and Node's net give a connection that could not be made or was lost. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

/** SQLSTATEs of a server that is going away or not yet there (class 08 is checked apart). */
const SERVER_GONE = new Set(['57P01', '57P02', '57P03']);

/**
 * What a postgres.js failure becomes: StorageUnavailableError when the server cannot be
 * reached, DatabaseError for a failed statement, anything else unchanged. The reason kept is a
 * code, never the error's message: postgres.js puts the host and port there.
 */
export function translatePostgresError(error: unknown): unknown {
  if (error instanceof DatabaseError || error instanceof StorageUnavailableError) return error;
  const e = error as { message?: string; code?: unknown; name?: string } | null;
  if (!e || typeof e !== 'object') return error;
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (e.name === 'PostgresError') {
    if (code && (code.startsWith('08') || SERVER_GONE.has(code))) {
      return new StorageUnavailableError(code);
    }
    return new DatabaseError(String(e.message), code);
  }
  if (code && UNREACHABLE.has(code)) return new StorageUnavailableError(code);
  return error;
}

/** Failures that come before a statement reaches the server: it cannot have run. */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_ENDED',
  '57P03',
]);
/** A statement that only reads (a `select` the service writes calls no writing function). */
const READS = /^\s*(select|show|values)\b/i;
/** A read with common table expressions first (`with a as (select ...) select ...`). */
const WITH = /^\s*with\b/i;
/** What makes a `with` statement a write: a data-modifying CTE or main statement. */
const WRITES = /\b(insert|update|delete|merge)\b/i;

/**
 * A statement that only reads: running it twice changes nothing, and losing its connection
 * loses no write (a read answered "outcome unknown" would tell the caller to retry a write).
 */
export function onlyReads(text: string): boolean {
  return READS.test(text) || (WITH.test(text) && !WRITES.test(text));
}

/**
 * Reasons of a connection that was open and then found dead (its backend killed, its socket
 * reset or closed): a stale pooled connection, which postgres.js drops as it fails. Asked
 * again, the pool opens a fresh one. A server that refuses, times out or is starting is not
 * here: asking again at once would only wait or fail twice.
 */
const CONNECTION_DIED = new Set([
  'CONNECTION_CLOSED',
  'ECONNRESET',
  'EPIPE',
  '57P01', // admin_shutdown: pg_terminate_backend, or the server stopping
  '57P02', // crash_shutdown
  '08003', // connection_does_not_exist
  '08006', // connection_failure
]);

/**
 * Whether `error` (translated) is a stale pooled connection's failure: worth one more try on a
 * fresh connection where trying twice is harmless (a read, or a transaction whose callback
 * never ran).
 */
export function connectionDied(error: unknown): boolean {
  return error instanceof StorageUnavailableError && CONNECTION_DIED.has(error.reason);
}

/**
 * What the failure of one statement run on its own (autocommit, outside any transaction)
 * becomes: like translatePostgresError, but a writing statement whose connection was lost
 * after it may have reached the server is StorageOutcomeUnknownError: it may have committed,
 * so "nothing was written" would be a guess.
 */
export function translateAutocommitError(text: string, error: unknown): unknown {
  const translated = translatePostgresError(error);
  if (!(translated instanceof StorageUnavailableError)) return translated;
  if (NEVER_SENT.has(translated.reason) || onlyReads(text)) return translated;
  return new StorageOutcomeUnknownError(translated.reason);
}
