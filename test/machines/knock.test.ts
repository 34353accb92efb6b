import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor, initialTransition, transition } from 'xstate';
import {
  KNOCK_DAYS,
  knockMachine,
  knockCodec,
  knockStatus,
  newKnock,
  shownKnockStatus,
  type KnockEvent,
  type KnockSnapshot,
  type KnockStatus,
} from '../../machines/knock.ts';

const test = suite('knock machine');

const CREATED = Date.UTC(2030, 0, 1);
const EXPIRES = CREATED + KNOCK_DAYS * 24 * 3_600_000;
const KNOCKER = 'agent-knocker';
const TARGET = 'agent-target';
const STRANGER = 'agent-stranger';
const SHARED = 'ws-shared';

const input = {
  knock_id: 'knock-1',
  from_agent: KNOCKER,
  to_agent: TARGET,
  workspace_id: 'ws-public',
  created_at: CREATED,
  expires_at: EXPIRES,
};

const pending = (): KnockSnapshot => newKnock(input);

const accept = (by: string, at: number): KnockEvent => ({
  type: 'accept',
  by,
  at,
  workspaceId: SHARED,
});
const decline = (by: string, at: number): KnockEvent => ({ type: 'decline', by, at });
const withdraw = (by: string, at: number): KnockEvent => ({ type: 'withdraw', by, at });
const expire = (at: number): KnockEvent => ({ type: 'expire', at });

/** One knock in each end state, reached the ordinary way. */
function ended(): Record<Exclude<KnockStatus, 'pending'>, KnockSnapshot> {
  return {
    accepted: knockCodec.step(pending(), accept(TARGET, CREATED + 1)),
    declined: knockCodec.step(pending(), decline(TARGET, CREATED + 1)),
    withdrawn: knockCodec.step(pending(), withdraw(KNOCKER, CREATED + 1)),
    expired: knockCodec.step(pending(), expire(EXPIRES)),
  };
}

/** Every event anyone could send, early and late, in time and past it. */
const everyEvent: KnockEvent[] = [CREATED, EXPIRES - 1, EXPIRES, EXPIRES + 1].flatMap((at) => [
  ...[KNOCKER, TARGET, STRANGER].flatMap((by) => [
    accept(by, at),
    decline(by, at),
    withdraw(by, at),
  ]),
  expire(at),
]);

test('a new knock is pending and holds what it was made with, and no shared workspace yet', () => {
  const state = pending();
  assert.is(knockStatus(state), 'pending');
  assert.equal(state.context, input);
  assert.is(state.context.shared_workspace_id, undefined);
  assert.is(state.status, 'active');
});

test('newKnock starts where the machine itself starts', () => {
  assert.equal(pending().context, initialTransition(knockMachine, input)[0].context);
});

test('the target accepting in time accepts it and records the shared workspace', () => {
  const next = knockCodec.step(pending(), accept(TARGET, CREATED));
  assert.is(knockStatus(next), 'accepted');
  assert.is(next.context.shared_workspace_id, SHARED);
  assert.is(next.status, 'done');
});

test('the target accepting one millisecond before expiry still accepts it', () => {
  const next = knockCodec.step(pending(), accept(TARGET, EXPIRES - 1));
  assert.is(knockStatus(next), 'accepted');
  assert.is(next.context.shared_workspace_id, SHARED);
});

test('the knocker cannot accept its own knock: the snapshot is unchanged', () => {
  const start = pending();
  assert.is(knockCodec.step(start, accept(KNOCKER, CREATED)), start);
});

test('a stranger cannot accept a knock: the snapshot is unchanged', () => {
  const start = pending();
  assert.is(knockCodec.step(start, accept(STRANGER, CREATED)), start);
});

test('the target declining in time declines it, with no shared workspace', () => {
  const next = knockCodec.step(pending(), decline(TARGET, EXPIRES - 1));
  assert.is(knockStatus(next), 'declined');
  assert.is(next.context.shared_workspace_id, undefined);
  assert.is(next.status, 'done');
});

test('neither the knocker nor a stranger can decline: the snapshot is unchanged', () => {
  const start = pending();
  assert.is(knockCodec.step(start, decline(KNOCKER, CREATED)), start);
  assert.is(knockCodec.step(start, decline(STRANGER, CREATED)), start);
});

test('the knocker withdrawing in time withdraws it', () => {
  const next = knockCodec.step(pending(), withdraw(KNOCKER, EXPIRES - 1));
  assert.is(knockStatus(next), 'withdrawn');
  assert.is(next.status, 'done');
});

test('neither the target nor a stranger can withdraw: the snapshot is unchanged', () => {
  const start = pending();
  assert.is(knockCodec.step(start, withdraw(TARGET, CREATED)), start);
  assert.is(knockCodec.step(start, withdraw(STRANGER, CREATED)), start);
});

test('an answer by the target at or after the expiry millisecond expires the knock instead', () => {
  for (const event of [
    accept(TARGET, EXPIRES),
    decline(TARGET, EXPIRES),
    accept(TARGET, EXPIRES + 1),
  ]) {
    const next = knockCodec.step(pending(), event);
    assert.is(knockStatus(next), 'expired', `${event.type} at ${event.at - EXPIRES} ms`);
    assert.is(next.context.shared_workspace_id, undefined, 'a late accept makes no workspace');
  }
});

test('a withdrawal by the knocker at or after the expiry millisecond expires the knock instead', () => {
  assert.is(knockStatus(knockCodec.step(pending(), withdraw(KNOCKER, EXPIRES))), 'expired');
  assert.is(knockStatus(knockCodec.step(pending(), withdraw(KNOCKER, EXPIRES + 5))), 'expired');
});

test("a stranger's late events are still ignored: only the two parties find out it expired", () => {
  const start = pending();
  for (const event of [
    accept(STRANGER, EXPIRES),
    decline(STRANGER, EXPIRES),
    withdraw(STRANGER, EXPIRES),
  ]) {
    assert.is(knockCodec.step(start, event), start, event.type);
  }
});

test('a late answer of the wrong kind by a party still expires it (the target withdrawing late)', () => {
  // lateAnswer asks only whether the sender is a party: the knock is past its time either way.
  assert.is(knockStatus(knockCodec.step(pending(), withdraw(TARGET, EXPIRES))), 'expired');
  assert.is(knockStatus(knockCodec.step(pending(), decline(KNOCKER, EXPIRES))), 'expired');
});

test('expire before the expiry millisecond is ignored', () => {
  const start = pending();
  assert.is(knockCodec.step(start, expire(EXPIRES - 1)), start);
  assert.is(knockCodec.step(start, expire(CREATED)), start);
});

test('expire at and after the expiry millisecond expires the knock', () => {
  for (const at of [EXPIRES, EXPIRES + 1, EXPIRES + 365 * 24 * 3_600_000]) {
    const next = knockCodec.step(pending(), expire(at));
    assert.is(knockStatus(next), 'expired');
    assert.is(next.status, 'done');
  }
});

test('the four end states are final: no event of anyone, at any time, moves them', () => {
  for (const [status, start] of Object.entries(ended())) {
    assert.is(knockStatus(start), status);
    assert.is(start.status, 'done', `${status} is final`);
    for (const event of everyEvent) {
      const next = knockCodec.step(start, event);
      assert.is(next, start, `${status} + ${JSON.stringify(event)}`);
    }
  }
});

test('an accepted knock keeps its shared workspace whatever comes after it', () => {
  const accepted = ended().accepted;
  const [next] = transition(knockMachine, accepted, {
    type: 'accept',
    by: TARGET,
    at: CREATED + 2,
    workspaceId: 'ws-other',
  });
  assert.is(next.context.shared_workspace_id, SHARED);
});

test('a persisted snapshot survives JSON and restores to the same state and context', () => {
  for (const snapshot of [pending(), ...Object.values(ended())]) {
    const saved = JSON.parse(JSON.stringify(knockCodec.persist(snapshot))) as unknown;
    const restored = knockCodec.restore(saved);
    assert.is(knockStatus(restored), knockStatus(snapshot));
    assert.equal(restored.context, snapshot.context);
    assert.is(restored.status, snapshot.status);
  }
});

test('a restored snapshot runs in an actor without errors', () => {
  const saved = JSON.parse(JSON.stringify(knockCodec.persist(ended().accepted))) as KnockSnapshot;
  const actor = createActor(knockMachine, { snapshot: saved, input: undefined });
  const errors: unknown[] = [];
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  assert.is(actor.getSnapshot().value, 'accepted');
  assert.equal(errors, []);
  actor.stop();
});

test('a restored pending knock goes on: its guards hold as before', () => {
  const restored = knockCodec.restore(JSON.parse(JSON.stringify(knockCodec.persist(pending()))));
  assert.is(knockCodec.step(restored, accept(STRANGER, CREATED)), restored);
  const next = knockCodec.step(restored, accept(TARGET, CREATED));
  assert.is(knockStatus(next), 'accepted');
  assert.is(next.context.shared_workspace_id, SHARED);
  assert.is(knockStatus(knockCodec.step(restored, expire(EXPIRES))), 'expired');
});

test('an agent is shown a pending knock as expired from the expiry millisecond on, swept or not', () => {
  assert.is(shownKnockStatus('pending', EXPIRES, EXPIRES - 1), 'pending');
  assert.is(shownKnockStatus('pending', EXPIRES, EXPIRES), 'expired');
  assert.is(shownKnockStatus('pending', EXPIRES, EXPIRES + 1), 'expired');
});

test('an ended knock is shown as it ended, at any time', () => {
  for (const status of ['accepted', 'declined', 'withdrawn', 'expired'] as const) {
    assert.is(shownKnockStatus(status, EXPIRES, CREATED), status);
    assert.is(shownKnockStatus(status, EXPIRES, EXPIRES + 1), status);
  }
});

test('a knock lives 14 days', () => {
  assert.is(KNOCK_DAYS, 14);
});

test.run();
