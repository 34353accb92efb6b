/**
 * Time, as the service reads it. Everything that waits or expires (rate limits, long-poll
 * time-outs, later invite and link expiry) takes a Clock instead of reaching for Date.now and
 * setTimeout, so that tests move time forward by hand instead of sleeping through it.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now. */
  now(): number;
  /** Calls `fire` once, `ms` from now; returns the function that cancels it. */
  setTimeout(fire: () => void, ms: number): () => void;
}

/** The wall clock and the event loop's timers. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(fire, ms) {
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  },
};
