import { AsyncLocalStorage } from 'node:async_hooks';
import { assertEventData } from '../../protocol/events.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import type { Driver, Queryable, Transaction } from '../../storage/driver.ts';

/** Word to other processes that an actor's row reached `version`: their copies are stale. */
export interface ActorNotice {
  kind: string;
  id: string;
  version: number;
}

/** What a unit of work inside one transaction hands back to the commit path. */
export interface CommitWork<R> {
  result: R;
  /** One change row per agent concerned; pushed only after the commit. */
  changes?: ChangeDraft[];
  notices?: ActorNotice[];
  /** Runs after the commit, before the changes are pushed: where memory catches up. */
  afterCommit?: () => void;
}

/**
 * Throws unless each change is of a type protocol/events.ts declares, with data its schema
 * takes. The write path runs it before recording when the service is strict (`strictProtocol`,
 * the tests'): the write then fails whole, and nothing is pushed. The failure is also written to
 * stderr, since the test servers' log is silent and a job's failure reaches no caller.
 */
export function assertChangesDeclared(changes: readonly ChangeDraft[] | undefined): void {
  try {
    for (const change of changes ?? []) {
      const data = change.sharedData ? { ...change.sharedData, ...change.data } : change.data;
      assertEventData({ type: change.type, data });
    }
  } catch (error) {
    process.stderr.write(`strictProtocol: ${(error as Error).message}\n`);
    throw error;
  }
}

/** The write path: runs `work` in one transaction, records its changes, commits, then pushes. */
export type Commit = <R>(work: (tx: Transaction) => Promise<CommitWork<R>>) => Promise<R>;

/**
 * One request's writes, committed together: an Idempotency-Key claim, every command the
 * handler runs and the stored answer (docs/architecture.md). The transaction opens lazily, at
 * the first write, so a request that streams bytes first holds no database connection while
 * it does. Commands inside run as savepoints, one after another; what they would do after
 * their commit (memory, pushes) waits for the unit's commit, and is dropped if it rolls back.
 */
export class UnitOfWork {
  private opening: Promise<Transaction> | null = null;
  private done: Promise<void> | null = null;
  private finish!: (commit: boolean) => void;
  private readonly closing = new Promise<boolean>((resolve) => (this.finish = resolve));
  private readonly committed: UnitHook[] = [];
  private readonly rolledBack: UnitHook[] = [];
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly driver: Driver,
    /** Runs first in the transaction when it opens (e.g. claiming an Idempotency-Key). */
    private readonly onOpen: (tx: Transaction) => Promise<void> = async () => undefined,
  ) {}

  get isOpen(): boolean {
    return this.opening !== null;
  }

  /** The unit's transaction, begun on first call. */
  open(): Promise<Transaction> {
    this.opening ??= new Promise<Transaction>((resolve, reject) => {
      this.done = this.driver.transaction(async (tx) => {
        await this.onOpen(tx);
        resolve(tx);
        if (!(await this.closing)) throw new RolledBack();
      });
      this.done.catch(reject);
    });
    return this.opening;
  }

  /** Reads inside the unit's transaction (PGlite's one connection is held by it while open). */
  reader(): Queryable {
    return {
      query: async (text, params) => (await this.open()).query(text, params),
      script: async (text) => (await this.open()).script(text),
    };
  }

  /** Runs `work` in a savepoint of the unit's transaction, after the unit's earlier work. */
  async step<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    const tx = await this.open();
    const run = this.last.then(() => tx.savepoint(work));
    this.last = run.catch(() => undefined);
    return run;
  }

  onCommit(hook: UnitHook): void {
    this.committed.push(hook);
  }

  onRollback(hook: UnitHook): void {
    this.rolledBack.push(hook);
  }

  /**
   * Commits (when `commit` and something was written) or rolls back, then runs the hooks and
   * waits for those that return a promise, so the request is answered after them (a refused
   * upload's bytes are gone by then).
   */
  async end(commit: boolean): Promise<void> {
    this.finish(commit);
    try {
      if (this.done) await this.done;
    } catch (error) {
      await runHooks(this.rolledBack);
      if (error instanceof RolledBack) return;
      throw error;
    }
    await runHooks(commit ? this.committed : this.rolledBack);
  }
}

class RolledBack extends Error {}

/** What runs after a unit ends; a promise it returns is waited for (it must not reject). */
export type UnitHook = () => void | Promise<void>;

async function runHooks(hooks: readonly UnitHook[]): Promise<void> {
  const pending = hooks.map((hook) => hook()).filter((result) => result instanceof Promise);
  if (pending.length > 0) await Promise.all(pending);
}

/**
 * Runs `work`, a handler's several commands, as one write: in the request's unit of work when
 * it has one (a keyed request), else in a unit of its own, committed when `work` returns and
 * rolled back, every command of it, when it throws. For a handler that makes a row in one
 * command and writes through that row's actor in the next (`agree`: the deal's row, then the
 * agreement), so that a refusal or failure of the second leaves no trace of the first.
 */
export async function allOrNothing<T>(driver: Driver, work: () => Promise<T>): Promise<T> {
  if (currentUnit()) return work();
  const unit = new UnitOfWork(driver);
  let result: T;
  try {
    result = await withinUnit(unit, work);
  } catch (error) {
    await unit.end(false).catch(() => undefined);
    throw error;
  }
  await unit.end(true);
  return result;
}

/**
 * The current unit of work, carried through every promise `withinUnit` starts. On Node 20 an
 * AsyncLocalStorage in use hooks EVERY promise of the process (async_hooks), a cost every
 * request paid once one keyed write had run: so the store is switched on only while some unit
 * runs, and off again when the last one is done. Nothing is lost by that: outside every unit
 * there is no unit to find, and a unit's late stragglers (a timer it left) find none instead
 * of one that has ended.
 */
const units = new AsyncLocalStorage<UnitOfWork>();
/** How many `withinUnit` calls are under way (they may overlap: one per keyed request). */
let running = 0;

/** The unit of work of the request running now, if it opened one. */
export function currentUnit(): UnitOfWork | undefined {
  return running === 0 ? undefined : units.getStore();
}

/** Runs `work` with `unit` as the current unit of work of everything it awaits. */
export async function withinUnit<T>(unit: UnitOfWork, work: () => Promise<T>): Promise<T> {
  running++;
  try {
    return await units.run(unit, work);
  } finally {
    if (--running === 0) units.disable();
  }
}
