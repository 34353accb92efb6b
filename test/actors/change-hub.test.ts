import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ChangeHub, type StoredChange } from '../../actors/change-hub.ts';

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

test('the head moves with published changes once seeded, never backward', () => {
  const hub = new ChangeHub();
  assert.is(hub.head('a'), undefined);
  hub.seedHead('a', 3);
  hub.publish([change('a', 4)]);
  hub.seedHead('a', 2);
  assert.is(hub.head('a'), 4);
});

test('a waiter wakes at the first change of its agent', async () => {
  const hub = new ChangeHub();
  const woken = hub.waitForChange('a', 60_000, new AbortController().signal);
  hub.publish([change('b', 1)]);
  hub.publish([change('a', 1)]);
  await woken;
});

test('a waiter wakes when its signal aborts', async () => {
  const hub = new ChangeHub();
  const stop = new AbortController();
  const woken = hub.waitForChange('a', 60_000, stop.signal);
  stop.abort();
  await woken;
});

test.run();
