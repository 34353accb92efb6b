/**
 * What the main thread and the PGlite worker thread (worker.mjs) send each other. Messages are
 * plain data.
 */

export interface Statement {
  text: string;
  params?: readonly unknown[];
  /** Several statements without parameters, or a control statement (BEGIN, SAVEPOINT...). */
  script?: boolean;
  /** Answer one row `{table}` holding the result as a Table (driver.ts), rows as arrays. */
  table?: boolean;
}

/**
 * Statements run in order, as one message: a transaction's BEGIN travels with its first
 * statement and its COMMIT with its last (Transaction.lastQuery), so each message is one round
 * trip. The reply carries the rows of the last statement that is not a script (a COMMIT after
 * it leaves them); the first failure stops the rest.
 */
export type WorkerRequest = { id: number; statements: Statement[] } | 'close';

/** Each reply says how large the thread's WebAssembly memory is now (it never shrinks). */
export type WorkerReply = { memoryBytes: number } & (
  | { id: number; rows: Record<string, unknown>[] }
  | { id: number; error: { message: string; code?: string } }
);

/** What the worker thread is started with. */
export interface WorkerData {
  dataDir: string;
  /** The global the worker puts its cancel function under, for cancel.ts to call. */
  cancelHook: string;
  /** The most bytes PostgreSQL's WebAssembly memory may grow to; past it, `out of memory`. */
  memoryMaxBytes: number;
}
