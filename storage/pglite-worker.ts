/**
 * PGlite runs here, in its own thread: it blocks its thread for the whole of a query, and a
 * runaway query can only be stopped by terminating the thread. Messages are plain data.
 */
import { PGlite, types } from '@electric-sql/pglite';
import { parentPort, workerData } from 'node:worker_threads';

export interface Statement {
  text: string;
  params?: readonly unknown[];
  /** Several statements without parameters, or a control statement (BEGIN, SAVEPOINT...). */
  script?: boolean;
}

/**
 * Statements run in order, as one message: a transaction's BEGIN travels with its first
 * statement, so each message is one round trip. The reply carries the last statement's rows;
 * the first failure stops the rest.
 */
export type WorkerRequest = { id: number; statements: Statement[] } | 'close';

export type WorkerReply =
  | { id: number; rows: Record<string, unknown>[] }
  | { id: number; error: { message: string; code?: string } };

const { dataDir } = workerData as { dataDir: string };
const port = parentPort;
if (!port) throw new Error('pglite-worker must run as a worker thread');

// int8 as a JS number, as the postgres.js driver does: every int8 the service keeps (sequence
// numbers, byte counts) stays far below 2^53.
const db = await PGlite.create(dataDir, {
  parsers: { [types.INT8]: (value: string) => Number(value) },
});

async function runAll(statements: Statement[]): Promise<Record<string, unknown>[]> {
  let rows: Record<string, unknown>[] = [];
  for (const statement of statements) {
    // exec is the simple protocol: one step, where query is parse, describe, bind, execute.
    rows = statement.script
      ? (await db.exec(statement.text), [])
      : (await db.query<Record<string, unknown>>(statement.text, statement.params as unknown[]))
          .rows;
  }
  return rows;
}

port.on('message', (request: WorkerRequest) => {
  if (request === 'close') {
    void db.close().then(() => port.postMessage('closed'));
    return;
  }
  runAll(request.statements).then(
    (rows) => port.postMessage({ id: request.id, rows } satisfies WorkerReply),
    (error: { message?: string; code?: string }) => {
      // A trap inside the WebAssembly leaves PGlite unusable: let the thread die, and the
      // driver opens the data directory again in a new one.
      if (error instanceof WebAssembly.RuntimeError) {
        queueMicrotask(() => {
          throw error;
        });
        return;
      }
      port.postMessage({
        id: request.id,
        error: { message: String(error.message), code: error.code },
      } satisfies WorkerReply);
    },
  );
});
port.postMessage('ready');
