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

/**
 * The connection was lost while the transaction's COMMIT was in flight, and the database could
 * not be asked afterwards whether it committed: the writes may or may not be stored. Never
 * answered as "nothing was written"; a retry with the same Idempotency-Key replays the answer
 * when they were.
 */
export class StorageOutcomeUnknownError extends Error {
  /** A short machine-readable cause for logs, e.g. `CONNECTION_CLOSED`, `in progress`. */
  readonly reason: string;
  constructor(reason: string) {
    super(`The database connection was lost while committing (${reason}); the outcome is unknown.`);
    this.name = 'StorageOutcomeUnknownError';
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
/** Class 53, insufficient resources: no room on the database's disk. */
export const DISK_FULL = '53100';
/** Class 53: the server ran out of memory, connections or another resource; transient. */
export const INSUFFICIENT_RESOURCES = ['53000', '53200', '53300', '53400'] as const;
