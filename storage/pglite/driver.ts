import type { Driver, Row, Transaction, TransactionOptions } from '../driver.ts';
import { DatabaseError, QUERY_CANCELED, StorageUnavailableError } from '../database-error.ts';
import { preparePgliteDataDir } from './image.ts';
import { PgliteThread } from './thread.ts';
import { PgliteTransaction, Scope, type TransactionHost } from './transaction.ts';
import type { Statement } from './messages.ts';
import { TransactionGuard } from '../transaction-guard.ts';

export interface PgliteDriver extends Driver {
  /** Test-only: ends the worker thread unannounced, as a crash would. */
  crashWorkerForTests(): Promise<void>;
  /**
   * PostgreSQL's WebAssembly memory now (as of the last answer), the most it ever reached on
   * any thread, and how many times the thread was replaced because that memory had grown past
   * `memory.restartAboveBytes`.
   */
  memory(): { wasmBytes: number; peakWasmBytes: number; restarts: number };
}

/**
 * The embedded database's memory ceiling. PostgreSQL in PGlite lives in WebAssembly memory,
 * which grows and never shrinks: the process starts at ~200-400 MB RSS with 128 MiB of it.
 * `maxBytes` is the most it may grow to (one query past it fails `out of memory`, 53200);
 * `restartAboveBytes`: when a statement or transaction left it larger than this, the thread
 * is replaced before the next one runs, which gives the memory back. Together they keep the
 * process under ~1 GB RSS whatever agents' SQL does (figures in bench/, issue 32).
 */
export const PGLITE_MEMORY = { maxBytes: 512 * 2 ** 20, restartAboveBytes: 256 * 2 ** 20 };

export interface PgliteOptions {
  /**
   * How a statement past its time limit is stopped: canceled inside PostgreSQL (the default),
   * or, as before there was a cancel, by stopping the thread (bench/sql-timeouts.ts compares).
   */
  cancel?: 'in-engine' | 'stop-thread';
  /** The memory ceiling (PGLITE_MEMORY); tests lower it. */
  memory?: Partial<typeof PGLITE_MEMORY>;
}

const PING_DEADLINE_MS = 2000;
/**
 * After a statement past its time limit was canceled inside PostgreSQL, how long it has to stop
 * (at its next interrupt check: 10-80 ms measured on an idle machine, 200 on a busy one) before its thread is stopped.
 */
const CANCEL_GRACE_MS = 500;

const statementTimeout = () =>
  new DatabaseError('canceling statement due to statement timeout', QUERY_CANCELED);

/**
 * The embedded driver: PGlite in a worker thread, data under `dataDir`. PGlite has one
 * connection, so statements and transactions take turns here, in the main thread. A statement
 * past its time limit is canceled inside PostgreSQL (cancel.ts), so it holds the
 * connection for its time limit and a few milliseconds more. When the thread stops (a crash, or
 * a statement that a cancel did not stop within CANCEL_GRACE_MS, stopped on purpose), calls in
 * flight fail and a new thread opens the same data directory before the next statement runs.
 * `ping` takes its turn like any statement: a transaction holding the connection for more
 * than 2 s makes it fail, which is the truth (nothing else could run meanwhile).
 */
export async function openPglite(
  dataDir: string,
  options: PgliteOptions = {},
): Promise<PgliteDriver> {
  const cancelInEngine = options.cancel !== 'stop-thread';
  const memory = { ...PGLITE_MEMORY, ...options.memory };
  await preparePgliteDataDir(dataDir);
  const guard = new TransactionGuard();
  let closing = false;
  const startThread = () => PgliteThread.start(dataDir, onDeath, memory.maxBytes);
  let thread = await startThread();
  let reopening: Promise<PgliteThread> | null = null;
  let restarts = 0;
  /** The most PostgreSQL's memory reached on threads replaced so far. */
  let peakWasmBytes = 0;

  function reopen(after: Promise<void> = Promise.resolve()): Promise<PgliteThread> {
    const next = after
      .then(startThread)
      // A new thread's first statement is slow (hundreds of ms): take that cost here, so that
      // it never counts against the time limit of the statement that comes next.
      .then(async (started) => {
        await started.run([{ text: 'select 1', script: true }]);
        return started;
      })
      .then((started) => {
        thread = started;
        return started;
      })
      .finally(() => {
        if (reopening === next) reopening = null;
      });
    next.catch(() => undefined);
    reopening = next;
    return next;
  }
  function onDeath(dead: PgliteThread): void {
    if (!closing && dead === thread && !reopening) reopen();
  }
  async function connect(): Promise<PgliteThread> {
    if (closing) throw new StorageUnavailableError('the database is closed');
    try {
      if (reopening) return await reopening;
      if (!thread.alive) return await reopen();
      return thread;
    } catch (cause) {
      // The next call tries again.
      throw new StorageUnavailableError('the database thread did not start', cause);
    }
  }

  /** Messages sent to the thread for the service (Driver.roundTrips). */
  let roundTrips = 0;
  const host: TransactionHost = {
    connect,
    run(target: PgliteThread, statements: Statement[], timeoutMs?: number) {
      roundTrips++;
      if (!timeoutMs) return target.run(statements);
      const call = target.send(statements);
      let timedOut = false;
      let grace: NodeJS.Timeout | undefined;
      const stopThread = () => {
        const stopped = target.stop(statementTimeout());
        if (target === thread && !closing) reopen(stopped);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        // Inside PostgreSQL first: the thread, and everyone waiting for it, go on at once.
        if (cancelInEngine && target.cancel(call.id))
          grace = setTimeout(stopThread, CANCEL_GRACE_MS);
        else stopThread();
      }, timeoutMs);
      return call.answer
        .catch((error: unknown) => {
          // PostgreSQL says "due to user request": the user was the time limit.
          const canceled = error instanceof DatabaseError && error.sqlState === QUERY_CANCELED;
          throw timedOut && canceled ? statementTimeout() : error;
        })
        .finally(() => {
          clearTimeout(timer);
          clearTimeout(grace);
        });
    },
    discard(target: PgliteThread) {
      const stopped = target.stop(new StorageUnavailableError('the database thread was reset'));
      if (target === thread && !closing) reopen(stopped);
    },
  };

  /**
   * Between turns, when the last one left PostgreSQL's memory past the ceiling: the thread
   * closes cleanly (nothing is in flight between turns, and every commit is on disk) and a
   * new one opens the data directory before the next turn starts, so the next statement (a
   * write of the service included) waits ~1 s for it and then runs on the new thread.
   */
  async function restartIfGrown(): Promise<void> {
    if (closing || reopening || !thread.alive || thread.memoryBytes <= memory.restartAboveBytes)
      return;
    restarts++;
    peakWasmBytes = Math.max(peakWasmBytes, thread.memoryBytes);
    // A thread that did not start is started again by the next statement's connect().
    await reopen(thread.close()).catch(() => undefined);
  }

  // Turns: each statement or transaction waits for the one before it.
  let turn: Promise<unknown> = Promise.resolve();
  /** Statements and transactions waiting for their turn now. */
  let waiting = 0;
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    waiting++;
    const start = () => {
      waiting--;
      return work();
    };
    const result = turn.then(start, start);
    // The caller has its answer at once; the next turn waits for a restart, if one is due.
    turn = result.catch(() => undefined).then(restartIfGrown);
    return result;
  };
  const misused = (method: string): Promise<never> | null => {
    const error = guard.misuse(method);
    return error ? Promise.reject(error) : null;
  };
  // Agents' SQL waits here for the one before it to end, then takes its turn with the rest;
  // and after one that kept other work waiting, the next waits as long as it held the
  // connection. Without that pause, back-to-back slow queries would take the connection again
  // as soon as they let it go, ahead of the next step of a write (a write takes several turns,
  // one per step): one write waited a whole time limit per step. With it, when the service has
  // work, it gets at least half of the connection's time; when it has none, nothing waits.
  let agentsTurn: Promise<unknown> = Promise.resolve();
  const oneAgentQueryAtATime = <T>(work: () => Promise<T>): Promise<T> => {
    let pauseMs = 0;
    const timed = () =>
      exclusive(async () => {
        const started = performance.now();
        try {
          return await work();
        } finally {
          pauseMs = waiting > 0 ? performance.now() - started : 0;
        }
      });
    const result = agentsTurn.then(timed, timed);
    agentsTurn = result
      .catch(() => undefined)
      .then(() => pauseMs > 0 && new Promise((resolve) => setTimeout(resolve, pauseMs)));
    return result;
  };
  const runAlone = (statement: Statement) =>
    exclusive(async () => {
      const thread = await connect();
      roundTrips++;
      return thread.run([statement]);
    });

  async function transaction<T>(
    work: (tx: Transaction) => Promise<T>,
    options?: TransactionOptions,
  ): Promise<T> {
    const tx = new PgliteTransaction(host, options);
    const root = new Scope();
    let result: T;
    try {
      result = await guard.run(() => work(tx.handle(root)));
    } catch (error) {
      await tx.rollback();
      throw tx.rejection(root, error);
    }
    await tx.commit(root);
    return result;
  }

  return {
    kind: 'pglite',
    roundTrips: () => roundTrips,
    query: <T extends Row>(text: string, params: readonly unknown[] = []) =>
      misused('query') ?? (runAlone({ text, params }) as Promise<T[]>),
    script: (text) => misused('script') ?? runAlone({ text, script: true }).then(() => undefined),
    transaction: (work, options) =>
      misused('transaction') ??
      (options?.pool === 'agents' ? oneAgentQueryAtATime : exclusive)(() =>
        transaction(work, options),
      ),
    ping() {
      const misuse = misused('ping');
      if (misuse) return misuse;
      const answer = runAlone({ text: 'select 1', script: true });
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new StorageUnavailableError('no answer within 2 s')),
          PING_DEADLINE_MS,
        );
      });
      return Promise.race([answer, deadline]).then(
        () => clearTimeout(timer),
        (error: unknown) => {
          clearTimeout(timer);
          throw error instanceof StorageUnavailableError
            ? error
            : new StorageUnavailableError('the database did not answer', error);
        },
      );
    },
    async close() {
      await exclusive(async () => {
        closing = true;
        const last = await (reopening ?? Promise.resolve(thread)).catch(() => null);
        await last?.close();
      });
    },
    async crashWorkerForTests() {
      await thread.crash();
    },
    memory: () => ({
      wasmBytes: thread.memoryBytes,
      peakWasmBytes: Math.max(peakWasmBytes, thread.memoryBytes),
      restarts,
    }),
  };
}
