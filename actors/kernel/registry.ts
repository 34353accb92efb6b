import { ServiceError } from '../../protocol/errors.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import type { Commit, CommitWork } from './commit.ts';

/**
 * The live actors of one kind, by id: loaded from Postgres on first use (one load at a time
 * per id), each with a mailbox so its commands run one at a time, the least recently used
 * evicted past `capacity` once idle, and all drained by `flush` at shutdown.
 *
 * Every write goes through `command` (docs/architecture.md, "A write, end to end"): the actor is
 * pinned for the command's whole life, the command runs in one transaction, the actor's row
 * is written only if it is still at the version this copy was loaded at (optimistic
 * concurrency: another process may hold a copy too), and memory changes only after the commit.
 */
interface Actor {
  /** Called when the registry lets go of the actor; it must hold nothing unsaved by then. */
  dispose?(): void;
}

/**
 * An actor whose state is one versioned row. `S` is the state a command proposes; the actor
 * writes it in the command's transaction and takes it into memory only after the commit.
 */
export interface PersistentActor<S = unknown> extends Actor {
  readonly version: number;
  /**
   * Writes `next` provided the row is still at `this.version`, and returns the row's new
   * version; null when another process has moved it on (this copy is stale). With no `next`
   * the command changed nothing of the actor and its row is left alone: returns `this.version`.
   */
  persist(tx: Transaction, next: S | undefined): Promise<number | null>;
  /** After the commit: takes `next` (when given) and the row's version into memory. */
  apply(next: S | undefined, version: number): void;
}

/** What a command decides: its result, the changes it records, and the actor's next state. */
export interface CommandOutcome<R, S> extends CommitWork<R> {
  next?: S;
}

export type StateOf<A> = A extends PersistentActor<infer S> ? S : never;

export interface RegistryOptions<A extends PersistentActor> {
  /** The kind named in notices to other processes (`agent`, `workspace`, `deal`). */
  kind: string;
  /** Loads the actor from `db` (the transaction of the request when one is open); null if none. */
  load: (id: string, db: Queryable) => Promise<A | null>;
  /** Locks the actor's row in `tx` and returns its version; null when there is no row. */
  lock: (id: string, tx: Transaction) => Promise<number | null>;
  /** Where loads read from: the open unit of work's transaction, or the driver. */
  db: () => Queryable;
  commit: Commit;
  capacity: number;
  /** Told of each actor let go, so caches kept beside the registry can let go too. */
  onEvict?: (id: string) => void;
  /**
   * Lock the row (and reload a copy that proves stale) before every command, not only on a
   * retry: for actors whose commands decide from memory (membership) and write rows a stale
   * decision could collide with.
   */
  lockFirst?: boolean;
  /** Attempts of a command before it answers `409 conflict` (only a row that keeps moving under
   *  a lock, which the lock prevents, gets there). */
  maxAttempts?: number;
}

interface Entry<A> {
  actor: A;
  /** The tail of the mailbox: the promise of the last command sent. */
  tail: Promise<unknown>;
  /** Commands and readers holding the actor now; a pinned actor is never evicted. */
  pins: number;
  /** Loaded and not yet taken by the caller that loaded it: not evictable either. */
  fresh: boolean;
  /** Another process wrote a newer version: reload before the next command. */
  stale: boolean;
}

/** The tail of an empty mailbox: one settled promise shared by every entry (memory per resident actor). */
const NOTHING_SENT: Promise<unknown> = Promise.resolve();

/** The actor's row is gone (deleted meanwhile): the command finds nothing. */
class ActorGone extends Error {}

/** The row of the actor moved on under a stale copy; the registry reloads and retries. */
class StaleActor extends Error {
  constructor(kind: string, id: string) {
    super(`${kind} ${id} was changed by another process`);
  }
}

export class ActorRegistry<A extends PersistentActor> {
  private readonly entries = new Map<string, Entry<A>>();
  private readonly loading = new Map<string, Promise<boolean>>();
  /** Every command from the moment it is sent (even while its actor loads) until it settles. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly maxAttempts: number;

  constructor(private readonly options: RegistryOptions<A>) {
    this.maxAttempts = options.maxAttempts ?? 5;
  }

  get kind(): string {
    return this.options.kind;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The actor for `id`, loading it if needed; null when there is no such thing. For reads. */
  async get(id: string): Promise<A | null> {
    const present = this.entries.get(id);
    if (present && !present.stale) {
      this.touch(id, present);
      return present.actor;
    }
    const entry = await this.acquire(id);
    if (!entry) return null;
    this.release(id, entry);
    return entry.actor;
  }

  /** The actor if it is in memory now, without loading; does not count as a use. */
  peek(id: string): A | undefined {
    return this.entries.get(id)?.actor;
  }

  /**
   * Runs `work` as one command: after every command sent to this actor before it, in one
   * transaction with the records and changes it returns, the actor's next state written under
   * its version. Only after the commit does memory change and are the changes pushed. If the
   * copy was stale, it is reloaded and `work` runs again (so `work` must only read and write
   * through `tx`); after `maxAttempts` the caller gets `409 conflict`. Resolves with the
   * result, or null when there is no such actor.
   */
  command<R>(
    id: string,
    work: (actor: A, tx: Transaction) => Promise<CommandOutcome<R, StateOf<A>>>,
  ): Promise<R | null> {
    const sent = this.deliver(id, work);
    this.inFlight.add(sent);
    const forget = () => this.inFlight.delete(sent);
    sent.then(forget, forget);
    return sent;
  }

  /**
   * Records a new actor's first row (`work` inserts it) through the same commit path as a
   * command. The actor is loaded on first use, from what was committed.
   */
  create<R>(work: (tx: Transaction) => Promise<CommitWork<R>>): Promise<R> {
    const sent = this.options.commit(work);
    this.inFlight.add(sent);
    const forget = () => this.inFlight.delete(sent);
    sent.then(forget, forget);
    return sent;
  }

  /**
   * Word that the actor's row reached `version` (from another process). A copy older than that
   * is dropped now, or, while a command holds it, reloaded before the next one.
   */
  invalidate(id: string, version: number): void {
    const entry = this.entries.get(id);
    if (!entry || entry.actor.version >= version) return;
    if (entry.pins > 0 || entry.fresh) entry.stale = true;
    else this.drop(id, entry);
  }

  /**
   * Word from other processes may have been lost (the listening connection was down): every
   * copy is treated as stale, dropped now or reloaded before its next command.
   */
  invalidateAll(): void {
    for (const [id, entry] of this.entries) {
      if (entry.pins > 0 || entry.fresh) entry.stale = true;
      else this.drop(id, entry);
    }
  }

  /** Waits until every mailbox is empty. */
  async flush(): Promise<void> {
    while (this.inFlight.size > 0 || this.loading.size > 0) {
      await Promise.allSettled([...this.inFlight, ...this.loading.values()]);
    }
  }

  /** Drops every actor (after `flush`). */
  clear(): void {
    for (const [id, entry] of this.entries) this.drop(id, entry);
  }

  private async deliver<R>(
    id: string,
    work: (actor: A, tx: Transaction) => Promise<CommandOutcome<R, StateOf<A>>>,
  ): Promise<R | null> {
    const entry = await this.acquire(id);
    if (!entry) return null;
    const run = entry.tail.then(() => this.attempt(id, entry, work));
    entry.tail = run.catch(() => undefined);
    try {
      return await run;
    } finally {
      this.release(id, entry);
    }
  }

  /**
   * The first attempt is optimistic: no lock, the version checked when the row is written. If
   * the copy proved stale, the next attempt locks the row first (`SELECT ... FOR UPDATE`) and
   * reloads the actor inside that transaction when needed, so it cannot lose again: two
   * processes writing one actor never starve each other.
   */
  private async attempt<R>(
    id: string,
    entry: Entry<A>,
    work: (actor: A, tx: Transaction) => Promise<CommandOutcome<R, StateOf<A>>>,
  ): Promise<R | null> {
    const { kind, load, lock } = this.options;
    for (let attempt = 1; ; attempt++) {
      if (entry.stale && !(await this.reload(id, entry))) return null;
      try {
        return await this.options.commit(async (tx) => {
          if (attempt > 1 || this.options.lockFirst) {
            const version = await lock(id, tx);
            if (version === null) throw new ActorGone();
            if (version !== entry.actor.version) {
              const fresh = await load(id, tx);
              if (!fresh) throw new ActorGone();
              entry.actor.dispose?.();
              entry.actor = fresh;
            }
          }
          const actor = entry.actor;
          const outcome = await work(actor, tx);
          const version = await actor.persist(tx, outcome.next);
          if (version === null) throw new StaleActor(kind, id);
          const notices = outcome.notices ?? [];
          return {
            ...outcome,
            notices: outcome.next === undefined ? notices : [...notices, { kind, id, version }],
            afterCommit: () => {
              actor.apply(outcome.next, version);
              outcome.afterCommit?.();
            },
          };
        });
      } catch (error) {
        if (error instanceof ActorGone) {
          if (this.entries.get(id) === entry) entry.stale = true;
          return null;
        }
        if (!(error instanceof StaleActor)) throw error;
        entry.stale = true;
        if (attempt >= this.maxAttempts) {
          throw new ServiceError(
            'conflict',
            'Others changed this at the same moment, again and again. Retry the request.',
          );
        }
      }
    }
  }

  /** Replaces a stale copy with what the database holds now; false when it is gone. */
  private async reload(id: string, entry: Entry<A>): Promise<boolean> {
    const fresh = await this.options.load(id, this.options.db());
    if (!fresh) {
      if (this.entries.get(id) === entry) this.drop(id, entry);
      return false;
    }
    entry.actor.dispose?.();
    entry.actor = fresh;
    entry.stale = false;
    return true;
  }

  /** The entry for `id`, pinned; loading it once if needed. */
  private async acquire(id: string): Promise<Entry<A> | null> {
    for (;;) {
      const present = this.entries.get(id);
      if (present) {
        this.touch(id, present);
        present.fresh = false;
        present.pins++;
        return present;
      }
      // Loaded entries are `fresh` until taken here, so eviction cannot take them first.
      if (!(await this.loadOnce(id))) return null;
    }
  }

  private release(id: string, entry: Entry<A>): void {
    entry.pins--;
    if (entry.pins > 0) return;
    if (entry.stale && this.entries.get(id) === entry) this.drop(id, entry);
    this.evict();
  }

  private loadOnce(id: string): Promise<boolean> {
    let loading = this.loading.get(id);
    if (!loading) {
      loading = this.options.load(id, this.options.db()).then(
        (actor) => {
          this.loading.delete(id);
          if (!actor) return false;
          this.entries.set(id, {
            actor,
            tail: NOTHING_SENT,
            pins: 0,
            fresh: true,
            stale: false,
          });
          this.evict();
          return true;
        },
        (error: unknown) => {
          this.loading.delete(id);
          throw error;
        },
      );
      this.loading.set(id, loading);
    }
    return loading;
  }

  /** The id touched last: touching it again changes nothing, so it is skipped (hot path). */
  private lastTouched: string | undefined;

  /** Map order is use order: move to the end. */
  private touch(id: string, entry: Entry<A>): void {
    if (id === this.lastTouched) return;
    this.lastTouched = id;
    this.entries.delete(id);
    this.entries.set(id, entry);
  }

  private drop(id: string, entry: Entry<A>): void {
    this.entries.delete(id);
    entry.actor.dispose?.();
    this.options.onEvict?.(id);
  }

  /** Evicts the least recently used idle actors while over capacity. */
  private evict(): void {
    if (this.entries.size <= this.options.capacity) return;
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.options.capacity) break;
      if (entry.pins > 0 || entry.fresh) continue;
      this.drop(id, entry);
    }
  }
}
