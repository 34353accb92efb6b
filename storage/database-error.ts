/** A failed statement, with its SQLSTATE when the database gave one (e.g. 23505 unique). */
export class DatabaseError extends Error {
  readonly sqlState: string | undefined;
  constructor(message: string, sqlState?: string) {
    super(message);
    this.name = 'DatabaseError';
    this.sqlState = sqlState;
  }
}

/**
 * The database cannot be reached at all (refused or dropped connection, server shutting down or
 * starting, the embedded database's worker gone). Nothing of the call is known to be written.
 * The message never names the server, a connection string or a password: it may be logged.
 */
export class StorageUnavailableError extends Error {
  /** A short machine-readable cause for logs, e.g. `ECONNREFUSED`, `57P01`, `worker exited`. */
  readonly reason: string;
  /** `cause` only for errors of our own making (never one that names a server or a URL). */
  constructor(reason: string, cause?: unknown) {
    super(
      `The database cannot be reached (${reason}); try again in a moment.`,
      cause === undefined ? undefined : { cause },
    );
    this.name = 'StorageUnavailableError';
    this.reason = reason;
  }
}

export const UNIQUE_VIOLATION = '23505';
/** A write inside a READ ONLY transaction. */
export const READ_ONLY_SQL_TRANSACTION = '25006';
/** A statement after a failed one in the same transaction, before it ends. */
export const IN_FAILED_SQL_TRANSACTION = '25P02';
/** A statement stopped by the transaction's statement timeout. */
export const QUERY_CANCELED = '57014';
