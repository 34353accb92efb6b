import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor, initialTransition, transition } from 'xstate';
import {
  DEFAULT_INVITE_HOURS,
  REDEEM_REFUSALS,
  inviteExpiresAt,
  inviteMachine,
  inviteStatus,
  redeemOutcome,
  revokeOutcome,
  storedStatus,
  type InviteEvent,
  type InviteSnapshot,
} from '../../machines/invite.ts';

const test = suite('invite machine');

const CREATED = Date.UTC(2030, 0, 1);
const EXPIRES = CREATED + 7 * 24 * 3_600_000;

const input = {
  invite_id: 'inv-1',
  workspace_id: 'ws-1',
  created_by: 'agent-maker',
  created_at: CREATED,
  expires_at: EXPIRES,
};

function pending(): InviteSnapshot {
  return initialTransition(inviteMachine, input)[0];
}

function joined(): InviteSnapshot {
  return transition(inviteMachine, pending(), {
    type: 'redeem',
    agentId: 'agent-a',
    at: CREATED,
  })[0];
}

function expired(): InviteSnapshot {
  return transition(inviteMachine, pending(), { type: 'expire', at: EXPIRES })[0];
}

test('a new invite is pending and holds what it was made with', () => {
  const state = pending();
  assert.is(state.value, 'pending');
  assert.equal(state.context, input);
  assert.is(storedStatus(state), 'pending');
});

test('pending + redeem in time joins and remembers who joined', () => {
  const next = joined();
  assert.is(next.value, 'joined');
  assert.is(next.context.joined_agent_id, 'agent-a');
  assert.is(next.status, 'done');
});

test('pending + redeem one millisecond before expiry still joins', () => {
  const [next] = transition(inviteMachine, pending(), {
    type: 'redeem',
    agentId: 'agent-a',
    at: EXPIRES - 1,
  });
  assert.is(next.value, 'joined');
});

test('pending + redeem at the exact expiry millisecond expires instead of joining', () => {
  const [next] = transition(inviteMachine, pending(), {
    type: 'redeem',
    agentId: 'agent-a',
    at: EXPIRES,
  });
  assert.is(next.value, 'expired');
  assert.is(next.context.joined_agent_id, undefined);
});

test('pending + expire before the expiry millisecond is ignored', () => {
  const start = pending();
  const [next] = transition(inviteMachine, start, { type: 'expire', at: EXPIRES - 1 });
  assert.is(next.value, 'pending');
});

test('pending + expire at the exact expiry millisecond expires', () => {
  assert.is(expired().value, 'expired');
  assert.is(expired().status, 'done');
});

test('joined + redeem changes nothing: an invite admits one agent', () => {
  const [next] = transition(inviteMachine, joined(), {
    type: 'redeem',
    agentId: 'agent-b',
    at: CREATED + 1,
  });
  assert.is(next.value, 'joined');
  assert.is(next.context.joined_agent_id, 'agent-a');
});

test('joined + expire changes nothing: a used invite does not expire', () => {
  const [next] = transition(inviteMachine, joined(), { type: 'expire', at: EXPIRES + 1 });
  assert.is(next.value, 'joined');
});

test('expired + redeem changes nothing, even with a time before expiry', () => {
  const [next] = transition(inviteMachine, expired(), {
    type: 'redeem',
    agentId: 'agent-b',
    at: CREATED,
  });
  assert.is(next.value, 'expired');
  assert.is(next.context.joined_agent_id, undefined);
});

test('expired + expire changes nothing', () => {
  const [next] = transition(inviteMachine, expired(), { type: 'expire', at: EXPIRES + 5 });
  assert.is(next.value, 'expired');
});

test('redeemOutcome joins a pending invite in time', () => {
  const start = pending();
  const { next, outcome } = redeemOutcome(start, { type: 'redeem', agentId: 'a', at: CREATED });
  assert.is(outcome, 'joined');
  assert.is(next.value, 'joined');
});

test('redeemOutcome expires a pending invite redeemed at its expiry and says so', () => {
  const { next, outcome } = redeemOutcome(pending(), { type: 'redeem', agentId: 'a', at: EXPIRES });
  assert.is(outcome, 'expired');
  assert.is(next.value, 'expired');
});

test('redeemOutcome on a joined invite is already_used, with nothing to write', () => {
  const start = joined();
  const { next, outcome } = redeemOutcome(start, { type: 'redeem', agentId: 'b', at: CREATED });
  assert.is(outcome, 'already_used');
  assert.is(next, start);
});

test('redeemOutcome on an expired invite is expired, with nothing to write', () => {
  const start = expired();
  const { next, outcome } = redeemOutcome(start, { type: 'redeem', agentId: 'b', at: CREATED });
  assert.is(outcome, 'expired');
  assert.is(next, start);
});

test('each refused outcome maps to the code and status routes.md gives', () => {
  assert.is(REDEEM_REFUSALS.already_used.code, 'invite_already_used');
  assert.is(REDEEM_REFUSALS.already_used.status, 409);
  assert.is(REDEEM_REFUSALS.expired.code, 'invite_expired');
  assert.is(REDEEM_REFUSALS.expired.status, 410);
});

test('pending + revoke is revoked and final: a later redeem or expire changes nothing', () => {
  const [revoked] = transition(inviteMachine, pending(), { type: 'revoke', at: CREATED });
  assert.is(storedStatus(revoked), 'revoked');
  assert.is(revoked.status, 'done');
  const { next, outcome } = redeemOutcome(revoked, { type: 'redeem', agentId: 'a', at: CREATED });
  assert.is(outcome, 'revoked');
  assert.is(next, revoked);
  assert.is(
    storedStatus(transition(inviteMachine, revoked, { type: 'expire', at: EXPIRES })[0]),
    'revoked',
  );
});

test('revokeOutcome revokes a pending invite in time, expires one past its time, and leaves ended ones', () => {
  assert.is(revokeOutcome(pending(), EXPIRES - 1).outcome, 'revoked');
  const late = revokeOutcome(pending(), EXPIRES);
  assert.is(late.outcome, 'expired');
  assert.is(storedStatus(late.next), 'expired');
  const used = joined();
  assert.equal(revokeOutcome(used, CREATED), { next: used, outcome: 'already_used' });
  const gone = expired();
  assert.equal(revokeOutcome(gone, CREATED), { next: gone, outcome: 'expired' });
  const revoked = revokeOutcome(pending(), CREATED).next;
  assert.equal(revokeOutcome(revoked, CREATED), { next: revoked, outcome: 'already_revoked' });
  assert.is(REDEEM_REFUSALS.revoked.code, 'invite_revoked');
  assert.is(REDEEM_REFUSALS.revoked.status, 410);
});

test('an agent is shown expired from the expiry millisecond on, whether or not the job ran', () => {
  assert.is(inviteStatus(pending(), EXPIRES - 1), 'pending');
  assert.is(inviteStatus(pending(), EXPIRES), 'expired');
  assert.is(inviteStatus(joined(), EXPIRES + 1), 'joined');
  assert.is(inviteStatus(expired(), CREATED), 'expired');
});

test('an invite lives 7 days by default, and fractions of an hour count', () => {
  assert.is(DEFAULT_INVITE_HOURS, 168);
  assert.is(inviteExpiresAt(CREATED), EXPIRES);
  assert.is(inviteExpiresAt(CREATED, 0.5), CREATED + 1_800_000);
});

test('a persisted snapshot survives JSON and restores to the same state and context', () => {
  for (const snapshot of [pending(), joined(), expired()]) {
    const saved = JSON.parse(JSON.stringify(inviteMachine.getPersistedSnapshot(snapshot)));
    const actor = createActor(inviteMachine, { snapshot: saved, input });
    const errors: unknown[] = [];
    actor.subscribe({ error: (error) => errors.push(error) });
    actor.start();
    const restored = actor.getSnapshot();
    assert.is(restored.value, snapshot.value);
    assert.equal(restored.context, snapshot.context);
    assert.equal(errors, []);
    actor.stop();
  }
});

test('a restored pending invite goes on: it can still join', () => {
  const saved = JSON.parse(JSON.stringify(inviteMachine.getPersistedSnapshot(pending())));
  const actor = createActor(inviteMachine, { snapshot: saved, input });
  const restored = actor.getSnapshot();
  const { outcome, next } = redeemOutcome(restored, { type: 'redeem', agentId: 'z', at: CREATED });
  assert.is(outcome, 'joined');
  assert.is(next.context.joined_agent_id, 'z');
});

// The model: an invite is a pair (status, joined agent) that a plain function steps.
test('any sequence of events agrees with a plain model of the invite', () => {
  const event = fc.oneof(
    fc.record({
      type: fc.constant('redeem' as const),
      agentId: fc.constantFrom('a', 'b', 'c'),
      at: fc.integer({ min: CREATED - 10, max: EXPIRES + 10 }),
    }),
    fc.record({
      type: fc.constant('expire' as const),
      at: fc.integer({ min: CREATED - 10, max: EXPIRES + 10 }),
    }),
    fc.record({
      type: fc.constant('revoke' as const),
      at: fc.integer({ min: CREATED - 10, max: EXPIRES + 10 }),
    }),
  );
  fc.assert(
    fc.property(fc.array(event as fc.Arbitrary<InviteEvent>, { maxLength: 12 }), (events) => {
      let model: { status: string; agent?: string } = { status: 'pending' };
      let state = pending();
      for (const e of events) {
        if (model.status === 'pending') {
          if (e.type === 'redeem') {
            model = e.at < EXPIRES ? { status: 'joined', agent: e.agentId } : { status: 'expired' };
          } else if (e.type === 'revoke') model = { status: 'revoked' };
          else if (e.at >= EXPIRES) model = { status: 'expired' };
        }
        state = transition(inviteMachine, state, e)[0];
        assert.is(storedStatus(state), model.status);
        assert.is(state.context.joined_agent_id, model.agent);
      }
    }),
  );
});

test.run();
