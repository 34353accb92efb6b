import { Worker } from 'node:worker_threads';
import type { Row } from '../driver.ts';
import { DatabaseError, StorageUnavailableError } from '../database-error.ts';
import { CANCEL_HOOK, cancelInThread, watchPgliteThreads } from './cancel.ts';
import type { Statement, WorkerData, WorkerReply, WorkerRequest } from './messages.ts';

interface Waiter {
  resolve: (rows: Row[]) => void;
  reject: (error: Error) => void;
}

/**
 * One worker thread with PGlite open on a data directory, and the calls in flight to it. A
 * thread that stops for any reason stays stopped: the driver starts a new one.
 */
export class PgliteThread {
  private readonly pending = new Map<number, Waiter>();
  private nextId = 1;
  /** Why calls fail from now on; null while the thread serves. */
  private stopped: Error | null = null;
  private readonly exited: Promise<void>;
  /** PostgreSQL's WebAssembly memory as of the last answer: it grows, and never shrinks. */
  memoryBytes = 0;

  private constructor(
    private readonly worker: Worker,
    onDeath: (thread: PgliteThread) => void,
  ) {
    this.exited = new Promise((resolve) => worker.once('exit', () => resolve()));
    worker.on('message', (message: WorkerReply | 'ready' | 'closed') => {
      if (typeof message === 'string') return;
      this.memoryBytes = message.memoryBytes;
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if ('error' in message)
        waiter.reject(new DatabaseError(message.error.message, message.error.code));
      else waiter.resolve(message.rows);
    });
    // Unexpected: the thread crashed or was stopped from outside. `stop` and `close` set
    // `stopped` first, so they do not come here.
    const die = (cause?: unknown) => {
      if (this.stopped) return;
      this.fail(new StorageUnavailableError('the database thread stopped', cause));
      onDeath(this);
    };
    worker.on('error', die);
    worker.on('exit', () => die());
  }

  /** Opens PGlite on `dataDir` in a new thread; rejects with what stopped it from opening. */
  static async start(
    dataDir: string,
    onDeath: (thread: PgliteThread) => void,
    memoryMaxBytes: number,
  ): Promise<PgliteThread> {
    watchPgliteThreads();
    const worker = new Worker(new URL('./worker.mjs', import.meta.url), {
      workerData: { dataDir, cancelHook: CANCEL_HOOK, memoryMaxBytes } satisfies WorkerData,
    });
    await new Promise<void>((resolve, reject) => {
      const onExit = (code: number) => reject(new Error(`the PGlite worker exited (${code})`));
      worker.once('error', reject);
      worker.once('exit', onExit);
      worker.once('message', () => {
        worker.off('error', reject);
        worker.off('exit', onExit);
        resolve();
      });
    });
    return new PgliteThread(worker, onDeath);
  }

  get alive(): boolean {
    return this.stopped === null;
  }

  /** Runs the statements in order, as one message; resolves with the last one's rows. */
  run(statements: Statement[]): Promise<Row[]> {
    return this.send(statements).answer;
  }

  /** Like `run`, and names the request, for `cancel`. */
  send(statements: Statement[]): { id: number; answer: Promise<Row[]> } {
    const id = this.nextId++;
    if (this.stopped) return { id, answer: Promise.reject(this.stopped) };
    const answer = new Promise<Row[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, statements } satisfies WorkerRequest);
    });
    return { id, answer };
  }

  /**
   * Asks PostgreSQL in the thread to cancel request `id` if it still runs: its statement fails
   * with 57014 and the thread serves on. Returns false when it cannot ask (cancel.ts).
   */
  cancel(id: number): boolean {
    return !this.stopped && cancelInThread(this.worker.threadId, id);
  }

  /**
   * Terminates the thread at once, even in the middle of a query (the only way to stop one in
   * PGlite); calls in flight reject with `error`. Resolves once the thread is gone, so that
   * the data directory is free to open again. What was committed stays: it is on disk.
   */
  stop(error: Error): Promise<void> {
    if (!this.stopped) this.fail(error);
    void this.worker.terminate();
    return this.exited;
  }

  /** Test-only: terminates the thread as a crash would, unannounced. */
  crash(): Promise<void> {
    void this.worker.terminate();
    return this.exited;
  }

  /** Closes PGlite cleanly once the calls in flight have answered, then ends the thread. */
  async close(): Promise<void> {
    if (!this.stopped) {
      const closed = new Promise<void>((resolve) =>
        this.worker.on('message', (message) => message === 'closed' && resolve()),
      );
      this.stopped = new StorageUnavailableError('the database is closed');
      this.worker.postMessage('close' satisfies WorkerRequest);
      await Promise.race([closed, this.exited]);
    }
    await this.worker.terminate();
  }

  private fail(error: Error): void {
    this.stopped = error;
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
  }
}
