import * as assert from 'uvu/assert';

/** Lets the event loop turn until `check` holds; bounded, and no timer is involved. */
export async function turnsUntil(check: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(check(), 'the awaited state was reached');
}
