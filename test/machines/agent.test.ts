import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor, initialTransition, transition } from 'xstate';
import { agentMachine } from '../../machines/agent.ts';

const test = suite('agent machine');

test('a new agent is active with its remembered place from input', () => {
  const [state] = initialTransition(agentMachine, { readSeq: 4 });
  assert.is(state.value, 'active');
  assert.is(state.context.readSeq, 4);
});

test('reading moves the remembered place forward', () => {
  const [start] = initialTransition(agentMachine, { readSeq: 4 });
  const [next] = transition(agentMachine, start, { type: 'feed.read', seq: 9 });
  assert.is(next.context.readSeq, 9);
});

test('the remembered place never moves backward', () => {
  const [start] = initialTransition(agentMachine, { readSeq: 4 });
  const [next] = transition(agentMachine, start, { type: 'feed.read', seq: 2 });
  assert.is(next.context.readSeq, 4);
});

test('a persisted snapshot restores to the same state', () => {
  const actor = createActor(agentMachine, { input: { readSeq: 1 } }).start();
  actor.send({ type: 'feed.read', seq: 7 });
  const saved = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
  actor.stop();
  const restored = createActor(agentMachine, { snapshot: saved, input: { readSeq: 0 } }).start();
  assert.is(restored.getSnapshot().context.readSeq, 7);
  restored.stop();
});

test.run();
