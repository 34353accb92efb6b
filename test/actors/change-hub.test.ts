import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ChangeHub, type StoredChange } from '../../actors/kernel/change-hub.ts';
import { TestClock } from '../helpers/clock.ts';

const change = (agentId: string, seq: number): StoredChange => ({
  agentId,
  seq,
  event: {
    event_id: `00000000-0000-4000-8000-00000000000${seq}`,
    cursor: `c${seq}`,
    type: 't',
    at: new Date(0).toISOString(),
    data: {},
  },
});

const test = suite('change hub');

test('a listener receives only the changes of its agent', () => {
  const hub = new ChangeHub();
  const seen: number[] = [];
  hub.subscribe('a', (c) => seen.push(c.seq));
  hub.publish([change('a', 1), change('b', 1), change('a', 2)]);
  assert.equal(seen, [1, 2]);
});

test('a listener that throws is cut off without stopping the others', () => {
  const hub = new ChangeHub();
  const seen: number[] = [];
  let calls = 0;
  hub.subscribe('a', () => {
    calls++;
    throw new Error('bad listener');
  });
  hub.subscribe('a', (c) => seen.push(c.seq));
  hub.publish([change('a', 1)]);
  hub.publish([change('a', 2)]);
  assert.is(calls, 1);
  assert.equal(seen, [1, 2]);
});

test("a next-signal callback runs once, at its agent's next change or at a resync, and is no listener", () => {
  const hub = new ChangeHub();
  let calls = 0;
  hub.onNextSignal('a', () => calls++);
  assert.is(hub.listenerCount('a'), 0);
  hub.publish([change('b', 1)]);
  assert.is(calls, 0, "another agent's change");
  hub.publish([change('a', 1), change('a', 2)]);
  hub.publish([change('a', 3)]);
  assert.is(calls, 1, 'once');
  hub.onNextSignal('a', () => calls++);
  hub.resync();
  assert.is(calls, 2, 'a resync is a signal');
  const cancel = hub.onNextSignal('a', () => calls++);
  cancel();
  hub.publish([change('a', 4)]);
  assert.is(calls, 2, 'cancelled');
});

test('the head moves with published changes once seeded, never backward', () => {
  const hub = new ChangeHub();
  assert.is(hub.head('a'), undefined);
  hub.seedHead('a', 3);
  hub.publish([change('a', 4)]);
  hub.seedHead('a', 2);
  assert.is(hub.head('a'), 4);
});

/**
 * Whether the promise has settled by now. The race reacts first to the first promise that is
 * already settled, in the order given, so it answers without waiting for anything.
 */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  return (await Promise.race([promise, Promise.resolve(pending)])) !== pending;
}

test("a waiter wakes at the first change of its agent, not at another agent's", async () => {
  const clock = new TestClock();
  const hub = new ChangeHub(clock);
  const woken = hub.waitForChange('a', 60_000, new AbortController().signal);
  hub.publish([change('b', 1)]);
  assert.not.ok(await settled(woken), 'a change of another agent leaves it waiting');
  hub.publish([change('a', 1)]);
  assert.ok(await settled(woken), 'its own change wakes it, with no time passing');
  assert.is(hub.listenerCount('a'), 0, 'it stops listening');
  assert.is(clock.pending, 0, 'its time-out is cancelled');
});

test('a waiter wakes when its signal aborts', async () => {
  const clock = new TestClock();
  const hub = new ChangeHub(clock);
  const stop = new AbortController();
  const woken = hub.waitForChange('a', 60_000, stop.signal);
  assert.not.ok(await settled(woken));
  stop.abort();
  assert.ok(await settled(woken));
  assert.is(hub.listenerCount('a'), 0);
  assert.is(clock.pending, 0);
});

test('a waiter whose signal has already aborted does not wait at all', async () => {
  const clock = new TestClock();
  const hub = new ChangeHub(clock);
  const stop = new AbortController();
  stop.abort();
  assert.ok(await settled(hub.waitForChange('a', 60_000, stop.signal)));
  assert.is(hub.listenerCount('a'), 0);
  assert.is(clock.pending, 0);
});

test('with nothing new, a waiter gives up at its time-out and not a moment before', async () => {
  const clock = new TestClock();
  const hub = new ChangeHub(clock);
  const woken = hub.waitForChange('a', 60_000, new AbortController().signal);
  clock.advance(59_999);
  assert.not.ok(await settled(woken), 'still waiting 1 ms before the time-out');
  clock.advance(1);
  assert.ok(await settled(woken), 'woken at the time-out');
  assert.is(hub.listenerCount('a'), 0, 'and no longer listening');
});

test.run();
