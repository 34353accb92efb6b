/**
 * PGlite runs here, in its own thread: it blocks its thread for the whole of a query. A runaway
 * query is canceled inside PostgreSQL through the inspector (cancel.ts), or, when that
 * fails, stopped by terminating the thread. Messages are plain data.
 */
import { PGlite, types } from '@electric-sql/pglite';
import { parentPort, workerData } from 'node:worker_threads';
import { CANCEL_HOOK } from './cancel.ts';
import { PreparedStatements } from './statements.ts';

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

/**
 * PostgreSQL's shared memory is resident from the start in PGlite: it lives in the
 * WebAssembly memory, which is written through when PostgreSQL sets it up, and WebAssembly
 * memory never shrinks. initdb's 128 MB of shared buffers cost ~120 MB of RSS at idle
 * (bench/idle-rss.ts); 16 MB holds the hot pages of the service's own tables, and a page
 * outside them is one read from the operating system's file cache. (max_connections
 * stays: with max_locks_per_transaction it sizes the lock table a migration's transaction needs.)
 */
const MEMORY_SETTINGS = ['-c', 'shared_buffers=16MB'];

// int8 as a JS number, as the postgres.js driver does: every int8 the service keeps (sequence
// numbers, byte counts) stays far below 2^53.
const db = await PGlite.create(dataDir, {
  parsers: { [types.INT8]: (value: string) => Number(value) },
  startParams: [...PGlite.defaultStartParams, ...MEMORY_SETTINGS],
});

const statements = new PreparedStatements(db);

/** The request being answered, if any: a cancel names the request it is meant for. */
let running: number | null = null;
/** The last request answered; requests are answered in the order of their ids. */
let lastAnswered = 0;
/** Requests canceled before they started (this thread was busy): answered 57014 at once. */
const canceledEarly = new Set<number>();

/** What the Emscripten module exports and PGlite's types leave out: memory and two globals' addresses. */
const postgres = db.Module as unknown as {
  wasmMemory: WebAssembly.Memory;
  _QueryCancelPending: number;
  _InterruptPending: number;
};

/** Sets one of PostgreSQL's interrupt flags (a `volatile sig_atomic_t`, an int32 in wasm32). */
function setFlag(address: number, value: 0 | 1): void {
  // A fresh view each time: the buffer changes when the memory grows.
  new DataView(postgres.wasmMemory.buffer).setInt32(address, value, true);
}

/**
 * Run by cancel.ts through the inspector, on this thread, possibly in the middle of a
 * query: does what PostgreSQL's SIGINT handler does, so that the query stops at its next
 * interrupt check with 57014. A cancel for a request that has ended does nothing; one for a
 * request not started yet (the thread was busy) answers it 57014 when its turn comes.
 */
(globalThis as Record<string, unknown>)[CANCEL_HOOK] = (requestId: number): boolean => {
  if (running === requestId) {
    setFlag(postgres._QueryCancelPending, 1);
    setFlag(postgres._InterruptPending, 1);
    return true;
  }
  if (requestId <= lastAnswered) return false;
  canceledEarly.add(requestId);
  return true;
};

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
  if (canceledEarly.delete(request.id)) {
    lastAnswered = request.id;
    const error = { message: 'canceling statement due to user request', code: '57014' };
    port.postMessage({ id: request.id, error } satisfies WorkerReply);
    return;
  }
  running = request.id;
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
  } finally {
    // A cancel that came after its query ended must not stop the next request's statements.
    running = null;
    lastAnswered = request.id;
    setFlag(postgres._QueryCancelPending, 0);
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
