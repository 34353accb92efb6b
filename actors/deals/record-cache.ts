import { jsonText } from '../kernel/lasting-answer.ts';

/** The JSON text of the records a process keeps, at most (three times that in memory, about). */
export const RECORD_CACHE_BYTES = 4 * 1024 * 1024;
/**
 * How long a kept record's snapshot is trusted: the notes of changes it is checked against are
 * kept for an hour (RECORD_CHANGES_KEPT_MS), far longer than any transaction runs.
 */
export const RECORD_TRUSTED_MS = 10 * 60_000;
/** How long the notes of changes to records are kept (the `deals.records.forget` job). */
export const RECORD_CHANGES_KEPT_MS = 60 * 60_000;

interface Kept {
  /** The database snapshot read before the record was (or last found unchanged since). */
  snapshot: string;
  /** When that snapshot was taken, by this process's clock. */
  at: number;
  /** The answer, marked lasting: the HTTP door serialises it once. */
  answer: object;
  bytes: number;
}

/**
 * The public records this process computed, each beside the snapshot it was read after, the
 * least recently served dropped first once their JSON passes `maxBytes`. A record is served
 * again only after the database says that no transaction that changed it committed since its
 * snapshot (storage/deals/record-changes.ts recordStamp): what one process keeps, another's
 * writes invalidate.
 */
export class RecordCache {
  readonly #kept = new Map<string, Kept>();
  #bytes = 0;

  constructor(
    private readonly maxBytes = RECORD_CACHE_BYTES,
    private readonly trustedMs = RECORD_TRUSTED_MS,
  ) {}

  /** The snapshot to check `agentId`'s kept record against; null when none is kept or trusted. */
  snapshotOf(agentId: string, now: number): string | null {
    const kept = this.#kept.get(agentId);
    if (!kept) return null;
    if (now - kept.at <= this.trustedMs) return kept.snapshot;
    this.#drop(agentId, kept);
    return null;
  }

  /**
   * The kept record of `agentId`, found unchanged as of `snapshot` (taken at `now`), which it is
   * kept beside from now on; undefined when it is gone meanwhile.
   */
  unchanged(agentId: string, snapshot: string, now: number): object | undefined {
    const kept = this.#kept.get(agentId);
    if (!kept) return undefined;
    // Most recently served last: the first in the map is the first dropped.
    this.#kept.delete(agentId);
    this.#kept.set(agentId, { ...kept, snapshot, at: now });
    return kept.answer;
  }

  /** Keeps `answer` (lasting, never changed again), computed after `snapshot` taken at `now`. */
  keep(agentId: string, snapshot: string, now: number, answer: object): void {
    const old = this.#kept.get(agentId);
    if (old) this.#drop(agentId, old);
    const bytes = jsonText(answer).length;
    if (bytes > this.maxBytes) return;
    this.#kept.set(agentId, { snapshot, at: now, answer, bytes });
    this.#bytes += bytes;
    for (const [id, kept] of this.#kept) {
      if (this.#bytes <= this.maxBytes) break;
      this.#drop(id, kept);
    }
  }

  /** Forgets what is kept of `agentId` (its record changed). */
  forget(agentId: string): void {
    const kept = this.#kept.get(agentId);
    if (kept) this.#drop(agentId, kept);
  }

  /** The records kept and their JSON's length, for tests and the bench. */
  get size(): { records: number; bytes: number } {
    return { records: this.#kept.size, bytes: this.#bytes };
  }

  #drop(agentId: string, kept: Kept): void {
    this.#kept.delete(agentId);
    this.#bytes -= kept.bytes;
  }
}
