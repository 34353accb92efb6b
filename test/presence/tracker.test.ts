import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PresenceTracker } from '../../actors/presence/tracker.ts';
import type { Queryable, Row } from '../../storage/driver.ts';
import { TestClock } from '../helpers/clock.ts';
import { eventually } from '../helpers/turns.ts';

/**
 * The presence tracker's promises about the database and memory, whatever agents do: an agent's
 * moment is written at most once a minute by a process (a flood of calls costs one write, not
 * one each), never lost (a failed write is sent again), and an agent gone quiet is forgotten.
 * The writes are recorded by a Queryable that stands for the database (this is the tracker's
 * own unit; the doors' presence is tested through the real doors in presence.test.ts).
 */
const test = suite('the presence tracker writes at most once a minute and forgets who left');

class RecordedWrites implements Queryable {
  readonly batches: { agentIds: string[]; at: string[] }[] = [];
  failing = false;

  async query<T extends Row>(_text: string, params: readonly unknown[] = []): Promise<T[]> {
    if (this.failing) throw new Error('the database is away');
    this.batches.push({ agentIds: params[0] as string[], at: params[1] as string[] });
    return [];
  }

  async script(): Promise<void> {}
}

const MINUTE = 60_000;

function tracker(clock: TestClock, writes: RecordedWrites) {
  return new PresenceTracker(
    clock,
    () => writes,
    () => undefined,
    1,
  );
}

test('ten thousand calls by one agent in a minute cost one write at once, then one with the last moment when the minute is up', async () => {
  const clock = new TestClock();
  const writes = new RecordedWrites();
  const presence = tracker(clock, writes);
  presence.seen('a');
  await eventually('the first write', async () => (writes.batches.length === 1 ? true : null));
  assert.equal(writes.batches[0]?.agentIds, ['a']);
  for (let call = 0; call < 10_000; call++) {
    clock.advance(5);
    presence.seen('a');
  }
  const last = clock.now();
  const swept = presence.sweeps;
  await eventually('three sweeps', async () => (presence.sweeps >= swept + 3 ? true : null));
  assert.is(writes.batches.length, 1, 'nothing more within the minute');
  clock.advance(MINUTE - 50_000);
  await eventually('the minute is up', async () => (writes.batches.length === 2 ? true : null));
  assert.equal(writes.batches[1], { agentIds: ['a'], at: [new Date(last).toISOString()] });
  await presence.stop();
  assert.is(writes.batches.length, 2, 'nothing left unwritten');
});

test('the agents seen in one turn are written in one statement', async () => {
  const clock = new TestClock();
  const writes = new RecordedWrites();
  const presence = tracker(clock, writes);
  for (const agent of ['a', 'b', 'c']) presence.seen(agent);
  await eventually('one batch', async () => (writes.batches.length === 1 ? true : null));
  assert.equal(writes.batches[0]?.agentIds, ['a', 'b', 'c']);
  await presence.stop();
});

test('a write that fails is sent again; nothing seen is lost while the process runs', async () => {
  const clock = new TestClock();
  const writes = new RecordedWrites();
  const presence = tracker(clock, writes);
  writes.failing = true;
  presence.seen('a');
  await new Promise((resolve) => setImmediate(resolve));
  writes.failing = false;
  await eventually('written on a later sweep', async () =>
    writes.batches.length === 1 ? true : null,
  );
  assert.equal(writes.batches[0]?.agentIds, ['a']);
  await presence.stop();
});

test('a held connection keeps its agent seen; an agent quiet past the window is forgotten', async () => {
  const clock = new TestClock();
  const writes = new RecordedWrites();
  const presence = tracker(clock, writes);
  presence.hold('held');
  presence.seen('quiet');
  clock.advance(10 * MINUTE);
  assert.equal(presence.here('held'), { held: 1, lastSeenMs: clock.now() });
  await eventually('the quiet agent is forgotten', async () =>
    presence.here('quiet').lastSeenMs === null ? true : null,
  );
  assert.is(presence.size, 1, 'only the held agent is kept');
  await eventually('the held agent written again', async () =>
    writes.batches.some((batch) => batch.at[0] === new Date(clock.now()).toISOString())
      ? true
      : null,
  );
  presence.release('held');
  presence.release('held');
  assert.is(presence.here('held').held, 0, 'a release of none held counts for nothing');
  await presence.stop();
});

test.run();
