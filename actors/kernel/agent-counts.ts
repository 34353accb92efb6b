import type { ActorNotice } from './commit.ts';

/**
 * The notice kind for "figures this agent's account shows (storage use, unread counts, knock
 * settings) changed": every process, this one included, forgets its copy of them. Its version
 * is unused.
 */
export const COUNTS_NOTICE_KIND = 'counts';

/**
 * What a write that changes an agent's account figures without a change in its feed puts in
 * its `CommitWork.notices` (a file saved, a block staged, messages read, a knock setting). The
 * commit path then forgets the memo here after the commit and tells other processes to.
 */
export function countsNotice(agentId: string): ActorNotice {
  return { kind: COUNTS_NOTICE_KIND, id: agentId, version: 0 };
}

/** A figure as computed, and until when it holds without any write (the first expiry in it). */
export interface Counted<T> {
  value: T;
  /** Milliseconds since the epoch; Infinity when nothing in it expires. */
  validUntil: number;
}

/**
 * Each agent's account figures as last computed, kept until something changes them: a change
 * in the agent's feed (here or, by notification, in another process), a counts notice, or the
 * first expiry they counted. The tables stay the source of truth; this is their copy, so the
 * warm path of `whoami` makes no database round trip.
 *
 * A computation that overlaps a forget is not kept: it may have read the table before the
 * write committed.
 */
export class AgentCounts<T> {
  private readonly entries = new Map<string, Counted<T>>();
  /** Computations under way, by agent; a forget marks each of them. */
  private readonly computing = new Map<string, Set<{ forgotten: boolean }>>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  /** The figures if known and still valid at `now`. */
  peek(agentId: string, now: number): T | undefined {
    const entry = this.entries.get(agentId);
    if (!entry) return undefined;
    if (now >= entry.validUntil) {
      this.entries.delete(agentId);
      return undefined;
    }
    return entry.value;
  }

  /** The figures from memory, or computed by `compute` (and kept, unless forgotten meanwhile). */
  async get(agentId: string, now: number, compute: () => Promise<Counted<T>>): Promise<T> {
    const known = this.peek(agentId, now);
    if (known !== undefined) return known;
    const mark = { forgotten: false };
    let marks = this.computing.get(agentId);
    if (!marks) this.computing.set(agentId, (marks = new Set()));
    marks.add(mark);
    try {
      const counted = await compute();
      if (!mark.forgotten) this.keep(agentId, counted);
      return counted.value;
    } finally {
      marks.delete(mark);
      if (marks.size === 0) this.computing.delete(agentId);
    }
  }

  /** Something the figures count changed (after its commit): compute them again next time. */
  forget(agentId: string): void {
    this.entries.delete(agentId);
    for (const mark of this.computing.get(agentId) ?? []) mark.forgotten = true;
  }

  /** Forgets every agent's figures, including those being computed now. */
  clear(): void {
    this.entries.clear();
    for (const marks of this.computing.values()) for (const mark of marks) mark.forgotten = true;
  }

  private keep(agentId: string, counted: Counted<T>): void {
    this.entries.delete(agentId);
    if (this.entries.size >= this.capacity) {
      // Maps iterate in insertion order: the oldest computed goes first.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(agentId, counted);
  }
}

/** The figures `whoami` shows beside what the agent actor holds. */
export interface AccountCounts {
  storage: { kept: number; current: number; staged: number; reserved: number };
  unreadMessages: number;
  pendingKnocks: number;
  directKnocks: 'everyone' | 'nobody';
}
