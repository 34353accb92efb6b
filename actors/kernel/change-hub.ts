import type { ChangeEvent } from '../../protocol/events.ts';
import type { StoredChangeRow } from '../../storage/kernel/changes.ts';
import { realClock, type Clock } from './clock.ts';

/** A committed change, as stored: the agent it is for and its sequence number in that feed. */
export type StoredChange = StoredChangeRow;

/**
 * What a listener receives: a change committed here (with its event), or word from another
 * process on the same database that the agent's feed reached `seq` (no event: re-read).
 */
export interface FeedSignal {
  agentId: string;
  seq: number;
  event?: ChangeEvent;
  /** The event as JSON text, made once when it was recorded (storage/kernel/changes.ts). */
  json?: string;
  /**
   * The event's workspace (null: none), given with a change committed here: what a listener
   * scoped to one workspace reads without building the event object.
   */
  workspaceId?: string | null;
}

type Listener = (signal: FeedSignal) => void;

/** Adds `item` to the agent's set in `map`; returns the function that takes it out again. */
function addPerAgent<T>(map: Map<string, Set<T>>, agentId: string, item: T): () => void {
  let set = map.get(agentId);
  if (!set) map.set(agentId, (set = new Set()));
  set.add(item);
  return () => {
    set.delete(item);
    if (set.size === 0 && map.get(agentId) === set) map.delete(agentId);
  };
}

/**
 * Hands committed changes to whoever listens for an agent: sockets, long-poll waiters. It knows
 * no transport. Only committed changes are published (docs/architecture.md, "A write, end to end"),
 * so a listener may trust what it receives; a listener that missed something re-reads the
 * table by cursor, which is the source of truth.
 *
 * It also keeps each agent's newest sequence number it has seen, so `whoami` can count unread
 * changes without a query.
 */
export class ChangeHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly heads = new Map<string, number>();
  /** What waits for an agent's next signal, once (`onNextSignal`); not counted as listening. */
  private readonly nextSignal = new Map<string, Set<() => void>>();

  /** `clock` times the long-poll waits; tests pass one they move by hand. */
  constructor(private readonly clock: Clock = realClock) {}

  /** Listens for an agent's changes; returns the function that stops listening. */
  subscribe(agentId: string, listener: Listener): () => void {
    return addPerAgent(this.listeners, agentId, listener);
  }

  /** How many listen for the agent now (sockets, parked long-polls). */
  listenerCount(agentId: string): number {
    return this.listeners.get(agentId)?.size ?? 0;
  }

  /**
   * Calls `callback` once, at the agent's next signal (a change committed here, word from
   * another process, a resync); returns the function that cancels it. It is not one of the
   * agent's listeners (`listenerCount`): what uses it (a shared replay read) holds no connection.
   */
  onNextSignal(agentId: string, callback: () => void): () => void {
    return addPerAgent(this.nextSignal, agentId, callback);
  }

  private signalled(agentId: string): void {
    const waiting = this.nextSignal.get(agentId);
    if (!waiting) return;
    this.nextSignal.delete(agentId);
    for (const callback of waiting) callback();
  }

  /** Called after commit only. Listeners must not throw; one that does is cut off, not others. */
  publish(changes: readonly FeedSignal[]): void {
    for (const change of changes) {
      this.signalled(change.agentId);
      const head = this.heads.get(change.agentId);
      if (head !== undefined && change.seq > head) this.heads.set(change.agentId, change.seq);
      const set = this.listeners.get(change.agentId);
      if (!set) continue;
      for (const listener of [...set]) {
        try {
          listener(change);
        } catch {
          set.delete(listener);
        }
      }
    }
  }

  /** Word from another process that the agent's feed reached `seq`; listeners re-read. */
  signal(agentId: string, seq: number): void {
    this.publish([{ agentId, seq }]);
  }

  /**
   * Word from other processes may have been lost: every listener re-reads the table (the
   * signal's sequence number is unknown, so it is infinite), and the heads are loaded again.
   */
  resync(): void {
    this.heads.clear();
    for (const agentId of [...this.nextSignal.keys()]) this.signalled(agentId);
    for (const agentId of [...this.listeners.keys()]) {
      this.publish([{ agentId, seq: Number.POSITIVE_INFINITY }]);
    }
  }

  /** The newest sequence number known for the agent, or undefined when not yet loaded. */
  head(agentId: string): number | undefined {
    return this.heads.get(agentId);
  }

  /** Seeds the head from storage; a newer one already seen wins. */
  seedHead(agentId: string, seq: number): void {
    const known = this.heads.get(agentId);
    if (known === undefined || seq > known) this.heads.set(agentId, seq);
  }

  forget(agentId: string): void {
    this.heads.delete(agentId);
  }

  /**
   * Resolves at the first change for the agent, when `signal` aborts, or after `timeoutMs`;
   * whichever comes first. The caller then reads the table: the wake-up carries no data.
   */
  waitForChange(agentId: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        cancelTimer();
        unsubscribe();
        signal.removeEventListener('abort', done);
        resolve();
      };
      const cancelTimer = this.clock.setTimeout(done, timeoutMs);
      const unsubscribe = this.subscribe(agentId, done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
