// @ts-check
/**
 * PGlite runs here, in its own thread: it blocks its thread for the whole of a query. A runaway
 * query is canceled inside PostgreSQL through the inspector (cancel.ts), or, when that
 * fails, stopped by terminating the thread. Messages are plain data (messages.ts).
 *
 * Plain JavaScript, type-checked from its JSDoc (`// @ts-check`), so that the thread needs no
 * TypeScript loader: on Node 20 a worker does not inherit the main thread's, and registering
 * tsx in the thread cost ~50 MB of RSS for good (Node 20 runs module hooks in a thread of
 * their own). Keep it and statements.mjs free of imports of our .ts files (types excepted).
 */
/* global WebAssembly, queueMicrotask -- globals of every Node.js thread, unknown to this file's lint config */
import { PGlite, types } from '@electric-sql/pglite';
import { setFlagsFromString } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { PreparedStatements } from './statements.mjs';

/** @typedef {import('./messages.ts').Statement} Statement */
/** @typedef {import('./messages.ts').WorkerRequest} WorkerRequest */
/** @typedef {import('./messages.ts').WorkerReply} WorkerReply */
/** @typedef {Record<string, unknown>} Row */

const { dataDir, cancelHook, memoryMaxBytes } = /** @type {import('./messages.ts').WorkerData} */ (
  workerData
);
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

const WASM_PAGE_BYTES = 65536;

/**
 * PGlite makes PostgreSQL's WebAssembly memory itself, with a maximum of 2 GiB, and has no
 * option for it; that memory never shrinks, so one agent's query (a `string_agg` of a cross
 * join) took the process to 2 GB for good. While PGlite starts, the memory it makes is given
 * `memoryMaxBytes` as its maximum instead (a smaller maximum satisfies the module's import):
 * past it a growth fails, PostgreSQL's allocator answers `out of memory` (53200), and the
 * query fails alone while the thread serves on. Only this thread's global is touched.
 */
async function createWithMemoryCap() {
  const NativeMemory = WebAssembly.Memory;
  const maxPages = Math.floor(memoryMaxBytes / WASM_PAGE_BYTES);
  class CappedMemory extends NativeMemory {
    /** @param {WebAssembly.MemoryDescriptor} descriptor */
    constructor(descriptor) {
      const maximum = Math.min(descriptor.maximum ?? maxPages, maxPages);
      super({ ...descriptor, initial: Math.min(descriptor.initial, maximum), maximum });
    }
  }
  WebAssembly.Memory = CappedMemory;
  try {
    // int8 as a JS number, as the postgres.js driver does: every int8 the service keeps
    // (sequence numbers, byte counts) stays far below 2^53.
    return await PGlite.create(dataDir, {
      parsers: { [types.INT8]: (/** @type {string} */ value) => Number(value) },
      startParams: [...PGlite.defaultStartParams, ...MEMORY_SETTINGS],
    });
  } finally {
    WebAssembly.Memory = NativeMemory;
  }
}
/**
 * PostgreSQL's WebAssembly runs on V8's baseline compiler (Liftoff) only, never tiered up to
 * TurboFan: the optimized code of the functions PostgreSQL runs hot, and its compilation,
 * stayed resident for good and cost ~80 MB of the process's ~320 MB at idle (bench/idle-rss.ts:
 * 317 -> 235 MB). The price, measured in the same bench: a scan-heavy query ~30% slower, the
 * service's own statements (a reputation record, a store page) 0-10%, a write's latency within
 * noise. The flag is the process's, read when a module is compiled: set before PGlite compiles
 * PostgreSQL (the main thread runs no WebAssembly of ours).
 */
setFlagsFromString('--liftoff-only');
const db = await createWithMemoryCap();

const statements = new PreparedStatements(db);

/** The request being answered, if any: a cancel names the request it is meant for. */
/** @type {number | null} */
let running = null;
/** The last request answered; requests are answered in the order of their ids. */
let lastAnswered = 0;
/**
 * Whether a cancel reached the running request. PostgreSQL may have done with it already, while
 * PGlite still turns its result into rows here (a 100 MB row takes longer than the time limit,
 * and no interrupt check comes after): it fails all the same, as it ran past its limit.
 */
let canceledWhileRunning = false;
/** Requests canceled before they started (this thread was busy): answered 57014 at once. */
/** @type {Set<number>} */
const canceledEarly = new Set();

/**
 * What the Emscripten module exports and PGlite's types leave out: memory and two globals' addresses.
 * @typedef {{ wasmMemory: WebAssembly.Memory; _QueryCancelPending: number; _InterruptPending: number }} Postgres
 */
const postgres = /** @type {Postgres} */ (/** @type {unknown} */ (db.Module));

/**
 * Sets one of PostgreSQL's interrupt flags (a `volatile sig_atomic_t`, an int32 in wasm32).
 * @param {number} address
 * @param {0 | 1} value
 */
function setFlag(address, value) {
  // A fresh view each time: the buffer changes when the memory grows.
  new DataView(postgres.wasmMemory.buffer).setInt32(address, value, true);
}

/**
 * Run by cancel.ts through the inspector, on this thread, possibly in the middle of a
 * query: does what PostgreSQL's SIGINT handler does, so that the query stops at its next
 * interrupt check with 57014 (when none comes, the request fails 57014 once it ends). A cancel
 * for a request that has ended does nothing; one for a request not started yet (the thread was
 * busy) answers it 57014 when its turn comes.
 * @param {number} requestId
 * @returns {boolean}
 */
function cancel(requestId) {
  if (running === requestId) {
    canceledWhileRunning = true;
    setFlag(postgres._QueryCancelPending, 1);
    setFlag(postgres._InterruptPending, 1);
    return true;
  }
  if (requestId <= lastAnswered) return false;
  canceledEarly.add(requestId);
  return true;
}
/** @type {Record<string, unknown>} */ (globalThis)[cancelHook] = cancel;

/**
 * @param {Statement[]} batch
 * @returns {Promise<Row[]>}
 */
async function runAll(batch) {
  /** @type {Row[]} */
  let rows = [];
  for (const statement of batch) {
    if (statement.table) {
      const result = await db.query(statement.text, /** @type {unknown[]} */ (statement.params), {
        rowMode: 'array',
      });
      const columns = result.fields.map((field) => ({
        name: field.name,
        typeOid: field.dataTypeID,
      }));
      rows = [{ table: { columns, rows: result.rows } }];
      continue;
    }
    // A script (BEGIN, COMMIT, SAVEPOINT...) leaves the rows of the statement before it: a
    // transaction's last statement travels with its COMMIT (transaction.ts, lastQuery).
    if (statement.script) await statements.script(statement.text);
    else rows = await statements.query(statement.text, statement.params);
  }
  return rows;
}

/**
 * @param {{ id: number; rows: Row[] } | { id: number; error: { message: string; code?: string } }} answer
 */
const reply = (answer) =>
  port.postMessage(
    /** @type {WorkerReply} */ ({ ...answer, memoryBytes: postgres.wasmMemory.buffer.byteLength }),
  );

// One request at a time, start to end: a batch is a unit, and prepared statements are run
// with PGlite's raw protocol calls, which its own lock does not cover.
/** @type {Promise<void>} */
let queue = Promise.resolve();

/** What PostgreSQL answers a canceled statement. */
const CANCELED = { message: 'canceling statement due to user request', code: '57014' };

/** @param {{ id: number; statements: Statement[] }} request */
async function answer(request) {
  if (canceledEarly.delete(request.id)) {
    lastAnswered = request.id;
    reply({ id: request.id, error: CANCELED });
    return;
  }
  running = request.id;
  try {
    const rows = await runAll(request.statements);
    reply(canceledWhileRunning ? { id: request.id, error: CANCELED } : { id: request.id, rows });
  } catch (caught) {
    const error = /** @type {{ message?: string; code?: string }} */ (caught);
    // A trap inside the WebAssembly leaves PGlite unusable: let the thread die, and the
    // driver opens the data directory again in a new one.
    if (error instanceof WebAssembly.RuntimeError) {
      queueMicrotask(() => {
        throw error;
      });
      return;
    }
    reply({ id: request.id, error: { message: String(error.message), code: error.code } });
  } finally {
    // A cancel that came after its query ended must not stop the next request's statements.
    running = null;
    canceledWhileRunning = false;
    lastAnswered = request.id;
    setFlag(postgres._QueryCancelPending, 0);
  }
}

port.on('message', (/** @type {WorkerRequest} */ request) => {
  if (request === 'close') {
    queue = queue.then(() => db.close()).then(() => port.postMessage('closed'));
    return;
  }
  queue = queue.then(() => answer(request));
});
port.postMessage('ready');
