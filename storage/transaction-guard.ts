import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Catches the driver itself being used from inside one of its own transaction callbacks.
 * Such a statement would run outside the transaction (postgres.js) or wait for the
 * transaction, which waits for it, forever (PGlite's one connection). One guard per driver:
 * using another driver inside a transaction is fine.
 */
export class TransactionGuard {
  private readonly inside = new AsyncLocalStorage<{ open: boolean }>();
  /** Callbacks running now. */
  private open = 0;

  /** Runs a transaction callback; everything it starts carries the mark until it settles. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    // Timers and promises started by the callback keep the mark after it settles: `open`
    // tells those late callers apart, and they may use the driver as usual.
    const mark = { open: true };
    this.open++;
    try {
      return await this.inside.run(mark, work);
    } finally {
      mark.open = false;
      // With no callback running, every mark is closed: switching the store off costs those
      // late callers nothing (no mark reads as "outside"), and on Node 20 an enabled store
      // hooks every promise of the process, every request included. `run` switches it on again.
      if (--this.open === 0) this.inside.disable();
    }
  }

  /** The error to reject `driver.<method>()` with when called inside a callback, else null. */
  misuse(method: string): Error | null {
    if (!this.inside.getStore()?.open) return null;
    return new Error(
      `driver.${method}() was called inside a transaction callback of the same driver: ` +
        'use the transaction handed to the callback instead',
    );
  }
}
