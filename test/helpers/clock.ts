import type { Clock } from '../../actors/kernel/clock.ts';

interface Timer {
  at: number;
  order: number;
  fire: () => void;
}

/**
 * A clock that moves only when the test says so. `advance(ms)` fires, in time order, every
 * timer that falls due on the way (also timers set by those that fire), each seeing `now()` at
 * its own due time. Nothing real ever waits.
 */
export class TestClock implements Clock {
  private current: number;
  private readonly timers = new Set<Timer>();
  private made = 0;

  /** Starts at a fixed, ordinary moment, so that times printed from it read sensibly. */
  constructor(start = Date.UTC(2030, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fire: () => void, ms: number): () => void {
    const timer: Timer = { at: this.current + Math.max(0, ms), order: this.made++, fire };
    this.timers.add(timer);
    return () => void this.timers.delete(timer);
  }

  /** Timers set and neither fired nor cancelled. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing what falls due on the way. */
  advance(ms: number): void {
    const end = this.current + ms;
    for (let next = this.due(end); next; next = this.due(end)) {
      this.timers.delete(next);
      this.current = next.at;
      next.fire();
    }
    this.current = end;
  }

  private due(end: number): Timer | undefined {
    let first: Timer | undefined;
    for (const timer of this.timers) {
      if (timer.at > end) continue;
      if (!first || timer.at < first.at || (timer.at === first.at && timer.order < first.order))
        first = timer;
    }
    return first;
  }
}
