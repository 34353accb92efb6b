import type { Driver, Row, Transaction, TransactionOptions } from './driver.ts';
import { DatabaseError, QUERY_CANCELED, StorageUnavailableError } from './database-error.ts';
import { preparePgliteDataDir } from './pglite-image.ts';
import { PgliteThread } from './pglite-thread.ts';
import { PgliteTransaction, Scope, type TransactionHost } from './pglite-transaction.ts';
import type { Statement } from './pglite-worker.ts';
import { TransactionGuard } from './transaction-guard.ts';

export interface PgliteDriver extends Driver {
  /** Test-only: ends the worker thread unannounced, as a crash would. */
  crashWorkerForTests(): Promise<void>;
}

const PING_DEADLINE_MS = 2000;

/**
 * The embedded driver: PGlite in a worker thread, data under `dataDir`. PGlite has one
 * connection, so statements and transactions take turns here, in the main thread. When the
 * thread stops (a crash, or a statement timeout that stopped it on purpose), calls in flight
 * fail and a new thread opens the same data directory before the next statement runs.
 * `ping` takes its turn like any statement: a transaction holding the connection for more
 * than 2 s makes it fail, which is the truth (nothing else could run meanwhile).
 */
export async function openPglite(dataDir: string): Promise<PgliteDriver> {
  await preparePgliteDataDir(dataDir);
  const guard = new TransactionGuard();
  let closing = false;
  let thread = await PgliteThread.start(dataDir, onDeath);
  let reopening: Promise<PgliteThread> | null = null;

  function reopen(after: Promise<void> = Promise.resolve()): Promise<PgliteThread> {
    const next = after
      .then(() => PgliteThread.start(dataDir, onDeath))
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

  const host: TransactionHost = {
    connect,
    run(target: PgliteThread, statements: Statement[], timeoutMs?: number) {
      const call = target.run(statements);
      if (!timeoutMs) return call;
      const timer = setTimeout(() => {
        const stopped = target.stop(
          new DatabaseError('canceling statement due to statement timeout', QUERY_CANCELED),
        );
        if (target === thread && !closing) reopen(stopped);
      }, timeoutMs);
      return call.finally(() => clearTimeout(timer));
    },
    discard(target: PgliteThread) {
      const stopped = target.stop(new StorageUnavailableError('the database thread was reset'));
      if (target === thread && !closing) reopen(stopped);
    },
  };

  // Turns: each statement or transaction waits for the one before it.
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const result = turn.then(work, work);
    turn = result.catch(() => undefined);
    return result;
  };
  const misused = (method: string): Promise<never> | null => {
    const error = guard.misuse(method);
    return error ? Promise.reject(error) : null;
  };
  // Agents' SQL waits here for the one before it to end, then takes its turn with the rest.
  let agentsTurn: Promise<unknown> = Promise.resolve();
  const oneAgentQueryAtATime = <T>(work: () => Promise<T>): Promise<T> => {
    const result = agentsTurn.then(
      () => exclusive(work),
      () => exclusive(work),
    );
    agentsTurn = result.catch(() => undefined);
    return result;
  };
  const runAlone = (statement: Statement) =>
    exclusive(async () => (await connect()).run([statement]));

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
  };
}
