import type { Clock } from '../kernel/clock.ts';
import { recordSeen } from '../../storage/presence/presence.ts';
import type { Queryable } from '../../storage/driver.ts';
import { ONLINE_WINDOW_SECONDS } from '../../protocol/presence.ts';

/** A process writes an agent's moment at most this often. */
const WRITE_EVERY_MS = 60_000;
/** How often the held connections' moments are refreshed and late writes are sent (real time). */
const SWEEP_MS = 5_000;
/** What is kept of agents seen here, once neither held nor unwritten. */
const FORGET_AFTER_MS = ONLINE_WINDOW_SECONDS * 1000 + WRITE_EVERY_MS;

/** What this process knows of an agent's presence beyond the table. */
export interface SeenHere {
  /** Connections held open here now (sockets, parked long-polls). */
  held: number;
  /** The last moment seen here (service clock, ms), or null. */
  lastSeenMs: number | null;
}

interface Entry {
  held: number;
  seenMs: number;
  /** When this process last wrote the agent's moment (service clock); -Infinity: never. */
  writtenMs: number;
  /** A moment newer than the one written waits for its minute. */
  unwritten: boolean;
}

/**
 * Who this process has seen, and when: every call at any door and every connection held open
 * (sockets, parked long-polls) notes its agent here, in memory, on the request's path and at
 * no other cost. The moments reach `agent_presence` off that path: an agent not written in the
 * last minute is written at once (in a batch with the others of the same turn), so other
 * processes see it come online within moments; a newer moment waits for its minute, and a
 * sweep every few seconds sends those and refreshes the held connections' agents, so an agent
 * with a socket open stays seen everywhere. Each process writes an agent at most once a minute.
 */
export class PresenceTracker {
  private readonly entries = new Map<string, Entry>();
  /** Agents to write in the next batch (their minute is up). */
  private readonly due = new Set<string>();
  private batchQueued = false;
  private sweeper: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    /** Where the moments are written: the driver, outside any request's transaction. */
    private readonly writer: () => Queryable,
    private readonly log: (message: string) => void,
    /** Real milliseconds between sweeps (tests make it short). */
    private readonly sweepMs = SWEEP_MS,
  ) {}

  /** How many sweeps have run (a test waits on it instead of on time). */
  sweeps = 0;

  /** Agents this process keeps something of now (held, seen lately, or not yet written). */
  get size(): number {
    return this.entries.size;
  }

  /** The agent was seen now (a call at any door). */
  seen(agentId: string): void {
    const now = this.clock.now();
    let entry = this.entries.get(agentId);
    if (!entry) {
      entry = { held: 0, seenMs: now, writtenMs: -Infinity, unwritten: true };
      this.entries.set(agentId, entry);
    } else {
      if (now > entry.seenMs) entry.seenMs = now;
      entry.unwritten = true;
    }
    if (now - entry.writtenMs >= WRITE_EVERY_MS) this.queue(agentId);
    else this.sweepSoon();
  }

  /** A connection of the agent's is held open from now until `release` (once for each hold). */
  hold(agentId: string): void {
    this.seen(agentId);
    const entry = this.entries.get(agentId) as Entry;
    entry.held++;
    this.sweepSoon();
  }

  /** A connection held open (`hold`) has closed. */
  release(agentId: string): void {
    const entry = this.entries.get(agentId);
    if (!entry || entry.held === 0) return;
    entry.held--;
    // Its end is a moment it was seen: online for the window after it.
    this.seen(agentId);
  }

  /** What this process knows of the agent: connections held here, and its last moment here. */
  here(agentId: string): SeenHere {
    const entry = this.entries.get(agentId);
    if (!entry) return { held: 0, lastSeenMs: null };
    return { held: entry.held, lastSeenMs: entry.held > 0 ? this.clock.now() : entry.seenMs };
  }

  /** Agents with a connection held open here now. */
  heldHere(): string[] {
    return [...this.entries].filter(([, entry]) => entry.held > 0).map(([agentId]) => agentId);
  }

  /** Stops the sweep and sends what is unwritten (at shutdown, before storage closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweeper) clearTimeout(this.sweeper);
    this.sweeper = null;
    for (const [agentId, entry] of this.entries) if (entry.unwritten) this.due.add(agentId);
    await this.write();
  }

  private queue(agentId: string): void {
    this.due.add(agentId);
    if (this.batchQueued || this.stopped) return;
    this.batchQueued = true;
    // After the request's own work: one statement for every agent seen in this turn.
    setImmediate(() => {
      this.batchQueued = false;
      void this.write();
    });
  }

  private async write(): Promise<void> {
    if (this.due.size === 0) return;
    const batch: { agentId: string; at: Date }[] = [];
    const now = this.clock.now();
    for (const agentId of this.due) {
      const entry = this.entries.get(agentId);
      if (!entry) continue;
      const atMs = entry.held > 0 ? Math.max(entry.seenMs, now) : entry.seenMs;
      batch.push({ agentId, at: new Date(atMs) });
      entry.writtenMs = now;
      entry.unwritten = false;
    }
    this.due.clear();
    try {
      await recordSeen(this.writer(), batch);
    } catch (error) {
      // Kept for the next sweep: a moment not written is late, never lost while we run.
      for (const { agentId } of batch) {
        const entry = this.entries.get(agentId);
        if (entry) {
          entry.unwritten = true;
          entry.writtenMs = -Infinity;
        }
      }
      this.log(`presence: could not note ${batch.length} agents seen (${String(error)})`);
      this.sweepSoon();
    }
  }

  private sweepSoon(): void {
    if (this.sweeper || this.stopped) return;
    this.sweeper = setTimeout(() => {
      this.sweeper = null;
      this.sweep();
    }, this.sweepMs);
    this.sweeper.unref();
  }

  /** Refreshes held agents, sends moments whose minute is up, forgets agents long gone. */
  private sweep(): void {
    this.sweeps++;
    const now = this.clock.now();
    for (const [agentId, entry] of this.entries) {
      if (entry.held > 0) {
        entry.seenMs = Math.max(entry.seenMs, now);
        entry.unwritten = true;
      }
      if (entry.unwritten) {
        if (now - entry.writtenMs >= WRITE_EVERY_MS) this.due.add(agentId);
      } else if (now - entry.seenMs >= FORGET_AFTER_MS) {
        this.entries.delete(agentId);
      }
    }
    void this.write();
    // Until every agent seen here is written and forgotten.
    if (this.entries.size > 0) this.sweepSoon();
  }
}
