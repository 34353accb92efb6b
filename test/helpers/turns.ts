import * as assert from 'uvu/assert';

/** Lets the event loop turn until `check` holds; bounded, and no timer is involved. */
export async function turnsUntil(check: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(check(), 'the awaited state was reached');
}

/**
 * Asks until `ready` answers (anything but null or false), within `withinMs`: for what moves on
 * its own time (a database, another process). No timer between asks, only a turn of the loop.
 */
export async function eventually<T>(
  what: string,
  ready: () => Promise<T | null | false>,
  withinMs = 30_000,
): Promise<T> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    const value = await ready();
    if (value !== null && value !== false) return value;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`${what}: not within ${withinMs / 1000} s`);
}

/**
 * Settles as `promise` does, or fails naming `what` once `ms` have passed. A deadline, not a
 * sleep: the test goes on the moment the promise settles, and a missing event fails the test
 * instead of hanging it.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
