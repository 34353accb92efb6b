/**
 * The one small interface between the service and Postgres. Two drivers implement it (PGlite
 * in a worker thread, postgres.js); one contract suite (test/storage) holds both to it.
 *
 * Rules every driver keeps:
 * - `$1`-style parameters; values are never spliced into SQL text.
 * - Rows come back as plain objects: int8 and numeric-free counts as JS numbers, timestamptz as
 *   Date, json/jsonb parsed, bytea as Uint8Array (postgres.js gives a Buffer, PGlite a plain
 *   Uint8Array: use only what Uint8Array has), uuid as string.
 * - A commit is a commit: `transaction` resolves only when everything its callback wrote is
 *   committed. If any statement inside failed, the whole transaction is rolled back and rejects
 *   with that first statement's DatabaseError, even when the callback caught the error and
 *   resolved; the only way to go on after a failed statement is a `savepoint` around it.
 * - Reads reflect committed writes as soon as the write's promise resolves.
 * - Inside a `transaction` callback, use the transaction handed to it: calling the driver
 *   itself from there rejects at once (on PGlite, with its one connection, it would wait for
 *   itself forever).
 * - A call that fails because the database cannot be reached rejects with
 *   StorageUnavailableError; every other failed statement rejects with DatabaseError.
 */
export type Row = Record<string, unknown>;

export interface Queryable {
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs several parameterless statements: only for the service's own trusted SQL (migrations). */
  script(text: string): Promise<void>;
}

/**
 * A result as a table: columns in order (names may repeat, as SQL allows) and rows as arrays.
 * For agents' own SQL (the index), whose column names the service does not choose.
 */
export interface Table {
  columns: { name: string; typeOid: number }[];
  rows: unknown[][];
}

/** What a transaction callback gets; it refuses every call once the callback has settled. */
export interface Transaction extends Queryable {
  /** Like `query`, but the answer is a Table; never prepared (each text runs once). */
  queryTable(text: string, params?: readonly unknown[]): Promise<Table>;
  /**
   * Runs `work` inside a SAVEPOINT: if it rejects, or a statement inside it failed, only its
   * own writes are rolled back, the rejection propagates, and the enclosing transaction may go
   * on and commit. Nestable. One exception: on PGlite a statement timeout ends the enclosing
   * transaction too, which then rejects (the driver may have had to stop the whole thread).
   */
  savepoint<T>(work: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Like `query`, for the transaction's last statement: the driver may send the COMMIT (or
   * what it needs to learn a COMMIT's outcome) in the same round trip, so a write costs one
   * round trip fewer. Once it resolved, the handle refuses every call, and the callback must
   * return at once: on PGlite the transaction has committed by then. In a savepoint, and in a
   * transaction with a time limit, it is a plain `query` (the COMMIT comes later, on its own).
   */
  lastQuery<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

export interface TransactionOptions {
  /** BEGIN READ ONLY: any write inside fails (SQLSTATE 25006). */
  readOnly?: boolean;
  /**
   * Statement timeout for every statement in the transaction: a statement still running after
   * this many milliseconds rejects with DatabaseError 57014 (query_canceled), and so does the
   * transaction. (PGlite ignores `statement_timeout`; its driver cancels the statement inside
   * PostgreSQL, or stops the worker thread when the cancel does not stop it.)
   */
  timeoutMs?: number;
  /**
   * `agents`: the transaction runs agents' own SQL (the index). PostgreSQL gives it a small
   * pool of its own, so the service's work never waits for a free connection behind agents'
   * queries; PGlite, with its one connection, lets one such transaction wait for its turn at a
   * time, so that writes are never queued behind several of them.
   */
  pool?: 'service' | 'agents';
}

export interface Driver extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /**
   * How many times the service has waited on the database so far: a message to the PGlite
   * thread and its answer, or a flight of statements to PostgreSQL and their answers
   * (statements sent together count once). For the bench and for the tests that hold each
   * kind of write to its round trips.
   */
  roundTrips(): number;
  /** Runs `work` in one transaction; commits when it resolves, rolls back when it rejects. */
  transaction<T>(work: (tx: Transaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Resolves when the database answers a trivial query within ~2 s; rejects with
   * StorageUnavailableError otherwise. Used by /health.
   */
  ping(): Promise<void>;
  /**
   * Calls `onPayload` for each NOTIFY on `channel` from any process on this database. Only
   * drivers shared by several processes have it; it resumes by itself after a lost connection,
   * but notifications sent while disconnected are lost, so listeners treat them as hints and
   * re-read the tables.
   */
  listen?(channel: string, onPayload: (payload: string) => void): Promise<void>;
  /**
   * Calls `onResumed` each time listening resumes after a lost connection: notifications may
   * have been lost meanwhile, so whatever they keep fresh must be read again.
   */
  onListenResumed?(onResumed: () => void): void;
  /**
   * PostgreSQL: from now on the `agents` pool logs in as `user` (a role that can read only what
   * agents may). Resolves false, changing nothing, when that login does not work here.
   */
  loginAgentsAs?(user: string, password: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * The UUIDs of a PostgreSQL array read back as its text (`array_agg(...)::text`, `{a,b}`); null
 * (an aggregate over no rows) is none. A statement that would answer many rows of ids answers
 * one row of arrays instead, which PGlite's worker and either driver hand over far faster
 * (1,000 rows cost milliseconds). Only for elements whose text needs no quoting.
 */
export function uuidsOf(text: string | null): string[] {
  return text === null || text === '{}' ? [] : text.slice(1, -1).split(',');
}

/** The integers of an array's text (`{1,2}`), as `uuidsOf` reads ids; null is none. */
export function numbersOf(text: string | null): number[] {
  return uuidsOf(text).map(Number);
}
