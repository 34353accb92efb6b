import type { FeedSignal } from '../kernel/change-hub.ts';
import type { Services } from '../kernel/services.ts';

/**
 * Listens to one agent's feed for changes a reader may see, from before its first read to the
 * end of its wait, so that a change committed between a read and the wait still wakes it. A
 * change this process recorded for another workspace than `workspaceId` wakes nothing; word
 * from another process carries no event, so it wakes the reader to look (at most one read per
 * word: never a loop that spins).
 */
export class FeedWaiter {
  private pending = false;
  private wake: (() => void) | null = null;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly services: Services,
    agentId: string,
    workspaceId: string | null,
  ) {
    this.unsubscribe = services.hub.subscribe(agentId, (change: FeedSignal) => {
      if (
        workspaceId !== null &&
        change.workspaceId !== undefined &&
        change.workspaceId !== workspaceId
      ) {
        return;
      }
      this.pending = true;
      this.wake?.();
    });
  }

  /** Call right before each read: what came before it, the read sees. */
  reading(): void {
    this.pending = false;
  }

  /**
   * Resolves at the first change seen since `reading()` (at once if one came during the read),
   * when `signal` aborts, or after `timeoutMs` on the service's clock.
   */
  next(timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted || timeoutMs <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.wake = null;
        cancelTimer();
        signal.removeEventListener('abort', done);
        resolve();
      };
      const cancelTimer = this.services.clock.setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  stop(): void {
    this.unsubscribe();
    this.wake?.();
  }
}
