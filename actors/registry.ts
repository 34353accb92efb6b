/**
 * The live actors of one kind, by id: loaded from Postgres on first use (one load at a time
 * per id), each with a mailbox so its commands run one at a time, the least recently used
 * evicted past `capacity` once idle, and all drained by `flush` at shutdown.
 */
export interface Actor {
  /** Called when the registry lets go of the actor; it must hold nothing unsaved by then. */
  dispose?(): void;
}

interface Entry<A> {
  actor: A;
  /** The tail of the mailbox: the promise of the last command sent. */
  tail: Promise<unknown>;
  busy: number;
}

export class ActorRegistry<A extends Actor> {
  private readonly entries = new Map<string, Entry<A>>();
  private readonly loading = new Map<string, Promise<Entry<A> | null>>();
  /** Every command from the moment it is sent (even while its actor loads) until it settles. */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly load: (id: string) => Promise<A | null>,
    private readonly capacity: number,
    /** Told of each actor let go, so caches kept beside the registry can let go too. */
    private readonly onEvict: (id: string) => void = () => undefined,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The actor for `id`, loading it if needed; null when there is no such thing. */
  async get(id: string): Promise<A | null> {
    return (await this.entry(id))?.actor ?? null;
  }

  /** The actor if it is in memory now, without loading; does not count as a use. */
  peek(id: string): A | undefined {
    return this.entries.get(id)?.actor;
  }

  /**
   * Runs `command` in the actor's mailbox, after every command sent before it. Resolves with
   * its result, or null when there is no such actor.
   */
  send<R>(id: string, command: (actor: A) => Promise<R> | R): Promise<R | null> {
    const sent = this.deliver(id, command);
    this.inFlight.add(sent);
    const forget = () => this.inFlight.delete(sent);
    sent.then(forget, forget);
    return sent;
  }

  private async deliver<R>(id: string, command: (actor: A) => Promise<R> | R): Promise<R | null> {
    const entry = await this.entry(id);
    if (!entry) return null;
    entry.busy++;
    const run = entry.tail.then(() => command(entry.actor));
    entry.tail = run.catch(() => undefined);
    try {
      return await run;
    } finally {
      entry.busy--;
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
    for (const entry of this.entries.values()) entry.actor.dispose?.();
    this.entries.clear();
  }

  private async entry(id: string): Promise<Entry<A> | null> {
    const present = this.entries.get(id);
    if (present) {
      // Map order is use order: move to the end.
      this.entries.delete(id);
      this.entries.set(id, present);
      return present;
    }
    let loading = this.loading.get(id);
    if (!loading) {
      loading = this.load(id).then(
        (actor) => {
          this.loading.delete(id);
          if (!actor) return null;
          const entry: Entry<A> = { actor, tail: Promise.resolve(), busy: 0 };
          this.entries.set(id, entry);
          this.evict();
          return entry;
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

  /** Evicts the least recently used idle actors while over capacity. */
  private evict(): void {
    if (this.entries.size <= this.capacity) return;
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.capacity) break;
      if (entry.busy > 0) continue;
      this.entries.delete(id);
      entry.actor.dispose?.();
      this.onEvict(id);
    }
  }
}
