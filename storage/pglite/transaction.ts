import type { Row, Table, Transaction, TransactionOptions } from '../driver.ts';
import {
  DatabaseError,
  IN_FAILED_SQL_TRANSACTION,
  QUERY_CANCELED,
  StorageUnavailableError,
} from '../database-error.ts';
import type { PgliteThread } from './thread.ts';
import type { Statement } from './messages.ts';

/** What a transaction needs from the driver that runs it. */
export interface TransactionHost {
  /** The thread serving now, started again first if the last one stopped. */
  connect(): Promise<PgliteThread>;
  /**
   * Runs statements on `thread`; past `timeoutMs` they are canceled (or the thread stopped) and
   * fail 57014, even when the cancel came after PostgreSQL had finished them (worker.mjs).
   */
  run(thread: PgliteThread, statements: Statement[], timeoutMs?: number): Promise<Row[]>;
  /** Stops a thread left in an unknown state, so that the next call starts a clean one. */
  discard(thread: PgliteThread): void;
}

/** The transaction itself or one savepoint in it: remembers its first failed statement. */
export class Scope {
  firstError: Error | null = null;
  fail(error: Error): Error {
    this.firstError ??= error;
    return error;
  }
  /** What a callback's rejection becomes: "transaction aborted" says less than its cause. */
  rejection(error: unknown): unknown {
    const aborted = error instanceof DatabaseError && error.sqlState === IN_FAILED_SQL_TRANSACTION;
    return aborted && this.firstError ? this.firstError : error;
  }
}

/**
 * One transaction on PGlite, as postgres.js runs one on PostgreSQL: a failed statement fails
 * the whole transaction unless a savepoint around it was rolled back. Control statements
 * (BEGIN, SAVEPOINT, RELEASE, ROLLBACK TO) wait and travel with the next statement or the
 * COMMIT, so a transaction costs one round trip to the thread per statement, plus one.
 */
export class PgliteTransaction {
  private deferred: Statement[];
  /** The thread BEGIN ran on; the transaction lives and dies with it. */
  private thread: Promise<PgliteThread> | null = null;
  /** Set when a statement timed out or the thread stopped under the transaction: nothing of it can commit. */
  private broken: Error | null = null;
  private ended = false;
  /** Set when the COMMIT went with the last statement (lastQuery): nothing is left to do. */
  private committed = false;
  private savepoints = 0;
  private readonly timeoutMs: number | undefined;

  constructor(
    private readonly host: TransactionHost,
    options: TransactionOptions = {},
  ) {
    this.deferred = [{ text: options.readOnly ? 'begin read only' : 'begin', script: true }];
    this.timeoutMs = options.timeoutMs && options.timeoutMs > 0 ? options.timeoutMs : undefined;
  }

  /** The handle a callback (or a savepoint's callback, `root` false) gets. */
  handle(scope: Scope, root = true): Transaction {
    return {
      query: <T extends Row>(text: string, params: readonly unknown[] = []) =>
        this.execute(scope, { text, params }) as Promise<T[]>,
      lastQuery: <T extends Row>(text: string, params: readonly unknown[] = []) =>
        this.execute(scope, { text, params }, root) as Promise<T[]>,
      script: async (text: string) => {
        await this.execute(scope, { text, script: true });
      },
      queryTable: async (text: string, params: readonly unknown[] = []) => {
        const [row] = await this.execute(scope, { text, params, table: true });
        return (row as { table: Table }).table;
      },
      savepoint: (work) => this.savepoint(work),
    };
  }

  /** After the callback resolved: COMMIT, or ROLLBACK and reject when anything failed. */
  async commit(root: Scope): Promise<void> {
    // A stopped thread breaks a healthy transaction (a failed one runs nothing more), so when
    // both are set, `broken` came first.
    const failure = this.broken ?? root.firstError;
    if (failure) {
      await this.rollback();
      throw failure;
    }
    this.ended = true;
    // Nothing was ever sent: BEGIN never ran, and there is nothing to commit. Or the COMMIT
    // has gone already, with the last statement.
    if (!this.thread || this.committed) return;
    const thread = await this.thread;
    if (!thread.alive) throw new StorageUnavailableError('the database thread stopped');
    // No timeout on COMMIT: stopping the thread in the middle of it would leave its outcome
    // unknown to the caller.
    await this.host.run(thread, [...this.deferred.splice(0), { text: 'commit', script: true }]);
  }

  /** What the transaction rejects with when its callback rejected with `error`. */
  rejection(root: Scope, error: unknown): unknown {
    const aborted = error instanceof DatabaseError && error.sqlState === IN_FAILED_SQL_TRANSACTION;
    return aborted ? (this.broken ?? root.firstError ?? error) : error;
  }

  /** After the callback rejected, or to end a failed transaction. Never rejects. */
  async rollback(): Promise<void> {
    this.ended = true;
    this.deferred = [];
    if (!this.thread || this.committed) return;
    const thread = await this.thread.catch(() => null);
    // A stopped thread took the transaction with it; a canceled statement left it open.
    if (!thread?.alive) return;
    try {
      await this.host.run(thread, [{ text: 'rollback', script: true }]);
    } catch {
      // A connection that may still be inside this transaction must not serve the next one.
      this.host.discard(thread);
    }
  }

  /**
   * Runs `statement` after the deferred ones. The transaction's `last` statement ends the
   * handle, and the COMMIT goes with it, unless the transaction has a time limit: stopping the
   * thread in the middle of a COMMIT would leave its outcome unknown (commit()).
   */
  private async execute(scope: Scope, statement: Statement, last = false): Promise<Row[]> {
    if (this.ended) {
      throw new Error('this transaction has ended: its handle cannot be used after its callback');
    }
    if (this.broken) throw scope.fail(this.aftermath(this.broken));
    const commit = last && this.timeoutMs === undefined;
    // A failed statement the callback caught has doomed the transaction: it must not commit.
    if (commit && scope.firstError) throw scope.firstError;
    const statements = [...this.deferred.splice(0), statement];
    if (commit) statements.push({ text: 'commit', script: true });
    // From here on the handle is done with, whatever the answer: refused, as after commit().
    if (last) this.ended = true;
    try {
      this.thread ??= this.host.connect();
      const thread = await this.thread;
      if (!thread.alive) throw new StorageUnavailableError('the database thread stopped');
      const rows = await this.host.run(thread, statements, commit ? undefined : this.timeoutMs);
      if (commit) this.committed = true;
      return rows;
    } catch (error) {
      const failure = error as Error;
      const fatal =
        failure instanceof StorageUnavailableError ||
        (failure instanceof DatabaseError && failure.sqlState === QUERY_CANCELED);
      if (fatal) this.broken ??= failure;
      throw scope.fail(failure);
    }
  }

  private async savepoint<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    if (this.ended) {
      throw new Error('this transaction has ended: its handle cannot be used after its callback');
    }
    if (this.broken) throw this.aftermath(this.broken);
    const name = `s${++this.savepoints}`;
    this.deferred.push({ text: `savepoint ${name}`, script: true });
    const scope = new Scope();
    let result: T;
    try {
      result = await work(this.handle(scope, false));
    } catch (error) {
      this.undo(name);
      throw scope.rejection(error);
    }
    if (scope.firstError) {
      this.undo(name);
      throw scope.firstError;
    }
    this.end(name, `release savepoint ${name}`);
    return result;
  }

  private undo(name: string): void {
    // A stopped thread took the whole transaction with it: nothing to roll back to.
    if (!this.broken) this.end(name, `rollback to savepoint ${name}; release savepoint ${name}`);
  }

  /** Ends savepoint `name` with `text`, or drops it when it was never sent. */
  private end(name: string, text: string): void {
    if (this.deferred.at(-1)?.text === `savepoint ${name}`) this.deferred.pop();
    else this.deferred.push({ text, script: true });
  }

  /** What a statement gets after the thread was stopped under the transaction. */
  private aftermath(cause: Error): Error {
    if (cause instanceof StorageUnavailableError) {
      return new StorageUnavailableError('the database thread stopped');
    }
    return new DatabaseError(
      'current transaction is aborted, commands ignored until end of transaction block',
      IN_FAILED_SQL_TRANSACTION,
    );
  }
}
