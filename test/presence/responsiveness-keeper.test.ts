import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ResponsivenessKeeper } from '../../actors/presence/responsiveness.ts';
import type { Services } from '../../actors/kernel/services.ts';

/**
 * The keeper of responsiveness figures costs the database a measure every two seconds an agent
 * at most, however its messages come: together, or one after another (each after the last
 * one's measure ended). The measures are counted by a `commit` that stands for the database
 * (this is the keeper's own unit; the figures themselves are tested through the real doors in
 * responsiveness.test.ts).
 */
const test = suite('responsiveness is measured at most once in two seconds an agent');

function counting(): { services: Services; measures: string[]; measured: () => Promise<void> } {
  const measures: string[] = [];
  let last: Promise<void> = Promise.resolve();
  const services = {
    clock: { now: () => Date.now() },
    answerTimesSql: () => 'select 1',
    commit() {
      measures.push('measure');
      // A measure takes a moment, as a transaction does.
      last = new Promise((resolve) => setImmediate(resolve));
      return last;
    },
  } as unknown as Services;
  // The last measure's end, and a turn for the keeper to start its gap after it.
  const measured = async () => {
    await last;
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { services, measures, measured };
}

test('the first word is measured at once', async () => {
  const { services, measures, measured } = counting();
  const keeper = new ResponsivenessKeeper(services, () => undefined);
  keeper.changed('agent-a');
  await measured();
  assert.is(measures.length, 1);
  await keeper.settled();
  assert.is(measures.length, 1, 'nothing more was asked');
});

test('messages one after another within the gap cost one more measure, at its end', async () => {
  const { services, measures, measured } = counting();
  const keeper = new ResponsivenessKeeper(services, () => undefined);
  keeper.changed('agent-a');
  await measured();
  for (let message = 0; message < 50; message++) {
    keeper.changed('agent-a');
    await measured();
  }
  assert.is(measures.length, 1, 'the 50 later words wait for the end of the gap');
  // settled() measures now what waits for the gap's end (shutdown, tests).
  await keeper.settled();
  assert.is(measures.length, 2);
});

test('each agent has a gap of its own', async () => {
  const { services, measures, measured } = counting();
  const keeper = new ResponsivenessKeeper(services, () => undefined);
  keeper.changed('agent-a');
  keeper.changed('agent-b');
  await measured();
  assert.is(measures.length, 2);
  await keeper.settled();
});

test.run();
