/**
 * PGlite runs here, in its own thread: it blocks its thread for the whole of a query, and a
 * runaway query can only be stopped by terminating the thread. Messages are plain data.
 */
import { PGlite, types } from '@electric-sql/pglite';
import { parentPort, workerData } from 'node:worker_threads';

export interface WorkerRequest {
  id: number;
  text: string;
  params: unknown[];
  /** A script of several statements without parameters. */
  script?: boolean;
}

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

port.on('message', (request: WorkerRequest | 'close') => {
  if (request === 'close') {
    void db.close().then(() => port.postMessage('closed'));
    return;
  }
  const run = request.script
    ? db.exec(request.text).then(() => [])
    : db.query<Record<string, unknown>>(request.text, request.params).then((result) => result.rows);
  run.then(
    (rows) => port.postMessage({ id: request.id, rows } satisfies WorkerReply),
    (error: { message?: string; code?: string }) =>
      port.postMessage({
        id: request.id,
        error: { message: String(error.message), code: error.code },
      } satisfies WorkerReply),
  );
});
port.postMessage('ready');
