/**
 * Lets socket.io handshakes through one per turn of the event loop.
 *
 * A handshake's own work is small, but it comes in crowds: uWS hands over many upgrades at once,
 * and each handshake's continuation (the token, from the resolver's cache, the connect, its
 * rooms and first packets) ran in one long string of callbacks and microtasks. With 10,000
 * sockets connecting at once the event loop was held for up to half a second at a time
 * (measured with `--cpu-prof`), and every HTTP request, /health included, waited behind them.
 * Here each handshake waits for a `setImmediate` of its own; one scheduled from inside another
 * runs only after the loop has polled for I/O again, so requests are answered in between.
 */
export class HandshakeTurns {
  private readonly waiting: (() => void)[] = [];
  /** The index of the next one to let through: the queue is emptied from the front. */
  private next = 0;
  private scheduled = false;
  /** One went through in this turn of the loop (cleared at the loop's next check phase). */
  private wentThrough = false;

  /**
   * Calls `go` on a turn of the loop of its own, after those that asked before. A callback, not
   * a promise: what waits here is the least a handshake can hold while it waits.
   */
  take(go: () => void): void {
    this.waiting.push(go);
    this.schedule();
  }

  /**
   * Calls `go` at once when none waits and none went through in this turn of the loop (a lone
   * handshake need not wait); otherwise as `take` does.
   */
  takeNowOrLater(go: () => void): void {
    if (this.queued > 0 || this.wentThrough) {
      this.take(go);
      return;
    }
    this.markWentThrough();
    go();
  }

  /** How many wait for their turn now. */
  get queued(): number {
    return this.waiting.length - this.next;
  }

  private schedule(): void {
    if (this.scheduled || this.queued === 0) return;
    this.scheduled = true;
    setImmediate(this.letOneThrough);
  }

  private readonly letOneThrough = (): void => {
    this.scheduled = false;
    const go = this.waiting[this.next];
    this.waiting[this.next++] = NOTHING;
    if (this.next === this.waiting.length) {
      this.waiting.length = 0;
      this.next = 0;
    } else if (this.next > 1024 && this.next * 2 > this.waiting.length) {
      this.waiting.splice(0, this.next);
      this.next = 0;
    }
    this.schedule();
    this.markWentThrough();
    go?.();
  };

  private markWentThrough(): void {
    if (this.wentThrough) return;
    this.wentThrough = true;
    setImmediate(this.newTurn);
  }

  private readonly newTurn = (): void => {
    this.wentThrough = false;
  };
}

const NOTHING = (): void => undefined;
