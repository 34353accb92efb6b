import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor, initialTransition } from 'xstate';
import {
  conventionCodec,
  conventionMachine,
  conventionStatus,
  conventionStep,
  newConvention,
  type ConventionEvent,
  type ConventionSnapshot,
} from '../../machines/convention.ts';

const test = suite('convention machine');

const CELL = ['root', 'local', 'music'];
const ELSEWHERE = ['root', 'agent', 'tools'];

const place = (path: string[], byOperator = true): ConventionEvent => ({
  type: 'place',
  path,
  byOperator,
});
const refuse = (reason: string, byOperator = true): ConventionEvent => ({
  type: 'refuse',
  reason,
  byOperator,
});

const unplaced = (): ConventionSnapshot => newConvention('piano-tuning');
const placed = (): ConventionSnapshot => conventionStep(unplaced(), place(CELL)).next;
const refused = (): ConventionSnapshot => conventionStep(unplaced(), refuse('Not a service.')).next;

test('a new convention is unplaced, with no placement and no refusal', () => {
  const state = unplaced();
  assert.is(conventionStatus(state), 'unplaced');
  assert.equal(state.context, { name: 'piano-tuning', placement: null, refusal: null });
});

test('newConvention starts where the machine itself starts', () => {
  const [start] = initialTransition(conventionMachine, { name: 'piano-tuning' });
  assert.equal(unplaced().context, start.context);
  assert.equal(unplaced().value, start.value);
});

test('the operator places an unplaced convention: it is placed in that cell', () => {
  const { next, moved } = conventionStep(unplaced(), place(CELL));
  assert.ok(moved);
  assert.is(conventionStatus(next), 'placed');
  assert.equal(next.context.placement, CELL);
});

test('the placement is a copy: changing the event path afterwards changes nothing', () => {
  const path = [...CELL];
  const { next } = conventionStep(unplaced(), place(path));
  path.push('changed');
  assert.equal(next.context.placement, CELL);
});

test("a non-operator's place is ignored: unplaced, snapshot unchanged, moved false", () => {
  const start = unplaced();
  const { next, moved } = conventionStep(start, place(CELL, false));
  assert.is(moved, false);
  assert.is(next, start);
  assert.is(conventionStatus(next), 'unplaced');
  assert.is(next.context.placement, null);
});

test("a non-operator's refuse is ignored in every state", () => {
  for (const start of [unplaced(), placed()]) {
    const { next, moved } = conventionStep(start, refuse('spam', false));
    assert.is(moved, false);
    assert.is(next, start);
  }
});

test('a non-operator cannot move a placed convention, nor place a refused one', () => {
  const fromPlaced = placed();
  const moving = conventionStep(fromPlaced, place(ELSEWHERE, false));
  assert.is(moving.moved, false);
  assert.is(moving.next, fromPlaced);
  assert.equal(moving.next.context.placement, CELL);

  const fromRefused = refused();
  const placing = conventionStep(fromRefused, place(CELL, false));
  assert.is(placing.moved, false);
  assert.is(placing.next, fromRefused);
  assert.is(conventionStatus(placing.next), 'refused');
});

test('the operator moves a placed convention to another cell: placed elsewhere', () => {
  const { next, moved } = conventionStep(placed(), place(ELSEWHERE));
  assert.ok(moved);
  assert.is(conventionStatus(next), 'placed');
  assert.equal(next.context.placement, ELSEWHERE);
});

test('the operator refuses an unplaced convention: refused, with the reason', () => {
  const { next, moved } = conventionStep(unplaced(), refuse('Not a service.'));
  assert.ok(moved);
  assert.is(conventionStatus(next), 'refused');
  assert.is(next.context.refusal, 'Not a service.');
  assert.is(next.context.placement, null);
});

test('the operator refuses a placed convention: refused, and its placement is dropped', () => {
  const { next, moved } = conventionStep(placed(), refuse('Duplicate of legal-services.'));
  assert.ok(moved);
  assert.is(conventionStatus(next), 'refused');
  assert.is(next.context.placement, null);
  assert.is(next.context.refusal, 'Duplicate of legal-services.');
});

test('refusing a refused convention again changes nothing', () => {
  const start = refused();
  const { next, moved } = conventionStep(start, refuse('Again.'));
  assert.is(moved, false);
  assert.is(next, start);
  assert.is(next.context.refusal, 'Not a service.');
});

test('the operator places a refused convention: it is placed (they changed their minds)', () => {
  const { next, moved } = conventionStep(refused(), place(CELL));
  assert.ok(moved);
  assert.is(conventionStatus(next), 'placed');
  assert.equal(next.context.placement, CELL);
});

test('newConvention with a placement starts placed in that cell (the built-in ones)', () => {
  const state = newConvention('local-services', CELL);
  assert.is(conventionStatus(state), 'placed');
  assert.equal(state.context.placement, CELL);
  const moved = conventionStep(state, place(ELSEWHERE));
  assert.ok(moved.moved);
  assert.equal(moved.next.context.placement, ELSEWHERE);
});

test('newConvention with a null placement starts unplaced', () => {
  assert.is(conventionStatus(newConvention('dog-walking', null)), 'unplaced');
});

test('a persisted snapshot survives JSON and restores to the same status and context', () => {
  for (const snapshot of [unplaced(), placed(), refused(), newConvention('x', ELSEWHERE)]) {
    const saved = JSON.parse(JSON.stringify(conventionCodec.persist(snapshot))) as unknown;
    const restored = conventionCodec.restore(saved);
    assert.is(conventionStatus(restored), conventionStatus(snapshot));
    assert.equal(restored.context, snapshot.context);
  }
});

test('a restored snapshot runs in an actor without errors', () => {
  const saved = JSON.parse(JSON.stringify(conventionCodec.persist(placed()))) as ConventionSnapshot;
  const actor = createActor(conventionMachine, { snapshot: saved, input: undefined });
  const errors: unknown[] = [];
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  assert.is(conventionStatus(actor.getSnapshot()), 'placed');
  assert.equal(errors, []);
  actor.stop();
});

test('a restored convention goes on: the operator may move it, others still may not', () => {
  const restored = conventionCodec.restore(
    JSON.parse(JSON.stringify(conventionCodec.persist(placed()))),
  );
  assert.is(conventionStep(restored, place(ELSEWHERE, false)).moved, false);
  const { next, moved } = conventionStep(restored, place(ELSEWHERE));
  assert.ok(moved);
  assert.equal(next.context.placement, ELSEWHERE);
});

test.run();
