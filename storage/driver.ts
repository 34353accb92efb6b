/**
 * The one small interface between the service and Postgres. Two drivers implement it (PGlite
 * in a worker thread, postgres.js); one contract suite (test/storage) holds both to it.
 *
 * Rules every driver keeps:
 * - `$1`-style parameters; values are never spliced into SQL text.
 * - Rows come back as plain objects: int8 and numeric-free counts as JS numbers, timestamptz as
 *   Date, json/jsonb parsed, bytea as Uint8Array (a Buffer on both drivers), uuid as string.
 * - A failed query inside `transaction` rolls the whole transaction back and rejects.
 * - Reads reflect committed writes as soon as the write's promise resolves.
 */
export type Row = Record<string, unknown>;

export interface Queryable {
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs several parameterless statements: only for the service's own trusted SQL (migrations). */
  script(text: string): Promise<void>;
}

export interface Driver extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs `work` in one transaction; commits when it resolves, rolls back when it rejects. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Calls `onPayload` for each NOTIFY on `channel` from any process on this database. Only
   * drivers shared by several processes have it; notifications sent while disconnected are
   * lost, so listeners treat them as hints and re-read the tables.
   */
  listen?(channel: string, onPayload: (payload: string) => void): Promise<void>;
  close(): Promise<void>;
}
