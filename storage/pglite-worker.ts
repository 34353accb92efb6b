/**
 * PGlite runs here, in its own thread: it blocks its thread for the whole of a query, and a
 * runaway query can only be stopped by terminating the thread. Messages are plain data.
 */
import { PGlite, types } from '@electric-sql/pglite';
import { parentPort, workerData } from 'node:worker_threads';
import { PreparedStatements } from './pglite-statements.ts';

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
 * statement, so each message is one round trip. The reply carries the last statement's rows;
 * the first failure stops the rest.
 */
export type WorkerRequest = { id: number; statements: Statement[] } | 'close';

export type WorkerReply =
  | { id: number; rows: Record<string, unknown>[] }
  | { id: number; error: { message: string; code?: string } };

const { dataDir } = workerData as { dataDir: string };
if (!parentPort) throw new Error('pglite-worker must run as a worker thread');
const port = parentPort;

// int8 as a JS number, as the postgres.js driver does: every int8 the service keeps (sequence
// numbers, byte counts) stays far below 2^53.
const db = await PGlite.create(dataDir, {
  parsers: { [types.INT8]: (value: string) => Number(value) },
});

const statements = new PreparedStatements(db);

async function runAll(batch: Statement[]): Promise<Record<string, unknown>[]> {
  let rows: Record<string, unknown>[] = [];
  for (const statement of batch) {
    if (statement.table) {
      const result = await db.query(statement.text, statement.params as unknown[], {
        rowMode: 'array',
      });
      const columns = result.fields.map((field) => ({
        name: field.name,
        typeOid: field.dataTypeID,
      }));
      rows = [{ table: { columns, rows: result.rows } }];
      continue;
    }
    rows = statement.script
      ? (await statements.script(statement.text), [])
      : await statements.query(statement.text, statement.params);
  }
  return rows;
}

// One request at a time, start to end: a batch is a unit, and prepared statements are run
// with PGlite's raw protocol calls, which its own lock does not cover.
let queue: Promise<void> = Promise.resolve();

async function answer(request: { id: number; statements: Statement[] }): Promise<void> {
  try {
    const rows = await runAll(request.statements);
    port.postMessage({ id: request.id, rows } satisfies WorkerReply);
  } catch (caught) {
    const error = caught as { message?: string; code?: string };
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
  }
}

port.on('message', (request: WorkerRequest) => {
  if (request === 'close') {
    queue = queue.then(() => db.close()).then(() => port.postMessage('closed'));
    return;
  }
  queue = queue.then(() => answer(request));
});
port.postMessage('ready');
