import { StorageUnavailableError } from '../database-error.ts';

/**
 * How long one statement (or a transaction's begin or commit) may go without an answer before
 * the call is given up as lost. postgres.js 3.4.9 can leave a statement pending for ever when
 * its connection is killed at the wrong moment inside a transaction (seen with
 * pg_terminate_backend under load: neither the statement nor the transaction settles), which
 * would hold a request, and the actor mailbox behind it, with no end. The service's own
 * statements take milliseconds; agents' SQL has its own, shorter, statement_timeout.
 */
const STALL_MS = 15_000;

/**
 * Watches the statements of one call. `watch(promise)` gives up on the call when that promise
 * has not settled within STALL_MS; `given` rejects then, and is what the caller races against.
 * Every timer is cleared when its statement settles, so a healthy call leaves nothing behind.
 */
export class StallWatch {
  readonly given: Promise<never>;
  private giveUp!: (error: Error) => void;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly stallMs = STALL_MS) {
    this.given = new Promise<never>((_, reject) => (this.giveUp = reject));
    // Nobody may be racing against it when it fires after the call settled.
    this.given.catch(() => undefined);
  }

  /** Starts a stall timer; call the returned function when the awaited step settles. */
  begin(): () => void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.giveUp(new StorageUnavailableError(`no answer within ${this.stallMs / 1000} s`));
    }, this.stallMs);
    timer.unref();
    this.timers.add(timer);
    return () => {
      clearTimeout(timer);
      this.timers.delete(timer);
    };
  }

  /** `step`, given up on when it does not settle in time. */
  async watch<T>(step: Promise<T>): Promise<T> {
    const done = this.begin();
    try {
      return await Promise.race([step, this.given]);
    } finally {
      done();
    }
  }

  /** Clears every timer still running (the call settled). */
  clear(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
