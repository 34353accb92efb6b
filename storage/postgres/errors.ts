import { DatabaseError, StorageUnavailableError } from '../database-error.ts';

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
