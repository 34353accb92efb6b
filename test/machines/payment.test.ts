import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor, initialTransition } from 'xstate';
import {
  PAYMENT_HISTORY_LIMIT,
  PAYMENT_REASON_LIMIT,
  newPayment,
  paymentCodec,
  paymentMachine,
  paymentStatus,
  type PaymentEvent,
  type PaymentEvidence,
  type PaymentInput,
  type PaymentRpcAnswer,
  type PaymentSnapshot,
  type PaymentStatus,
} from '../../machines/payment.ts';

const test = suite('payment machine');

const CREATED = Date.UTC(2030, 0, 1);
const EXPIRES = CREATED + 7 * 24 * 3_600_000;
const PAYEE = '0x1111111111111111111111111111111111111111';
const DEPOSIT = '0x2222222222222222222222222222222222222222';
const STRANGER = '0x3333333333333333333333333333333333333333';
const PAYER = '0x4444444444444444444444444444444444444444';
const TX = `0x${'a'.repeat(64)}`;
const TX2 = `0x${'b'.repeat(64)}`;
const BLOCK = `0x${'c'.repeat(64)}`;
const OTHER_BLOCK = `0x${'d'.repeat(64)}`;
const RPC_A = 'https://rpc-a.test';
const RPC_B = 'https://rpc-b.test';

const input: PaymentInput = {
  payment_id: 'payment-1',
  amount_units: '12500000',
  payee_address: PAYEE,
  deposit_address: DEPOSIT,
  confirmations_required: 3,
  created_at: CREATED,
  expires_at: EXPIRES,
};

const requested = (): PaymentSnapshot => newPayment(input);

function evidence(overrides: Partial<PaymentEvidence> = {}): PaymentEvidence {
  return {
    tx_hash: TX,
    log_index: 2,
    block_number: 100,
    block_hash: BLOCK,
    from: PAYER,
    to: PAYEE,
    amount_units: '12500000',
    confirmations: 1,
    checked_at: CREATED + 10,
    rpc_answers: [{ rpc: RPC_A, block_hash: BLOCK }],
    ...overrides,
  };
}

const seenEvent = (at = CREATED + 10, overrides: Partial<PaymentEvidence> = {}): PaymentEvent => ({
  type: 'SEEN',
  evidence: evidence(overrides),
  at,
});
const confirmedEvent = (
  confirmations = 3,
  at = CREATED + 20,
  block_hash = BLOCK,
  rpc_answers: PaymentRpcAnswer[] = [
    { rpc: RPC_A, block_hash: BLOCK },
    { rpc: RPC_B, block_hash: BLOCK },
  ],
): PaymentEvent => ({ type: 'CONFIRMED', confirmations, block_hash, rpc_answers, at });
const finalEvent = (at = CREATED + 30): PaymentEvent => ({ type: 'FINAL', at });
const reorged = (at = CREATED + 25): PaymentEvent => ({ type: 'REORGED', at });
const expire = (at = EXPIRES): PaymentEvent => ({ type: 'EXPIRE', at });
const unknown = (at = CREATED + 5, reason = 'rpc-a timed out after 5000 ms'): PaymentEvent => ({
  type: 'CHECKED_UNKNOWN',
  tx_hash: TX,
  reason,
  at,
});

const step = (snapshot: PaymentSnapshot, ...events: PaymentEvent[]) =>
  events.reduce((state, event) => paymentCodec.step(state, event), snapshot);

const seen = () => step(requested(), seenEvent());
const confirmed = () => step(seen(), confirmedEvent());
const final = () => step(confirmed(), finalEvent());
const expired = () => step(requested(), expire());

/** JSON in, JSON out: what a row's `machine` column does to a snapshot. */
const throughJson = (snapshot: PaymentSnapshot) =>
  paymentCodec.restore(JSON.parse(JSON.stringify(paymentCodec.persist(snapshot))));

test('a new payment is requested, holds what it was made with, no evidence, one history line', () => {
  const state = requested();
  assert.is(paymentStatus(state), 'requested');
  assert.is(state.status, 'active');
  assert.is(state.context.evidence, null);
  assert.is(state.context.check, null);
  assert.is(state.context.dropped_tx_hash, null);
  assert.equal(state.context.history, [{ status: 'requested', at: CREATED, reason: 'requested' }]);
  for (const [key, value] of Object.entries(input)) {
    assert.equal(state.context[key as keyof PaymentInput], value, key);
  }
});

test('newPayment starts where the machine itself starts', () => {
  assert.equal(requested().context, initialTransition(paymentMachine, input)[0].context);
});

test('a matching transfer to the payee before expiry moves requested to seen with its evidence', () => {
  const next = seen();
  assert.is(paymentStatus(next), 'seen');
  assert.equal(next.context.evidence, evidence());
  assert.equal(next.context.history.at(-1), {
    status: 'seen',
    at: CREATED + 10,
    reason: 'transfer in block 100',
    tx_hash: TX,
  });
});

test('a transfer to the deposit address (any letter case) credits the payment too', () => {
  const next = step(requested(), seenEvent(CREATED + 10, { to: DEPOSIT.toUpperCase() }));
  assert.is(paymentStatus(next), 'seen');
});

test('a transfer of more than the amount credits it; one unit short does not', () => {
  assert.is(
    paymentStatus(step(requested(), seenEvent(CREATED, { amount_units: '99000000' }))),
    'seen',
  );
  const start = requested();
  assert.is(paymentCodec.step(start, seenEvent(CREATED, { amount_units: '12499999' })), start);
});

test('a transfer to another address is not credited: the snapshot is unchanged', () => {
  const start = requested();
  assert.is(paymentCodec.step(start, seenEvent(CREATED, { to: STRANGER })), start);
});

test('evidence with an amount that is not a decimal integer is not credited', () => {
  const start = requested();
  for (const amount_units of ['', '-1', '1e9', '12500000.0', '0x1000000', ' 12500000']) {
    assert.is(paymentCodec.step(start, seenEvent(CREATED, { amount_units })), start, amount_units);
  }
});

test('a payment without a deposit address credits only transfers to the payee', () => {
  const start = newPayment({ ...input, deposit_address: null });
  assert.is(paymentCodec.step(start, seenEvent(CREATED, { to: DEPOSIT })), start);
  assert.is(paymentStatus(paymentCodec.step(start, seenEvent(CREATED))), 'seen');
});

test('a transfer seen at or after expiry is not credited: the snapshot is unchanged', () => {
  const start = requested();
  assert.is(paymentStatus(step(start, seenEvent(EXPIRES - 1))), 'seen');
  assert.is(paymentCodec.step(start, seenEvent(EXPIRES)), start);
  assert.is(paymentCodec.step(start, seenEvent(EXPIRES + 1)), start);
});

test('SEEN is taken only in requested: seen, confirmed, final and expired ignore it', () => {
  for (const start of [seen(), confirmed(), final(), expired()]) {
    assert.is(paymentCodec.step(start, seenEvent(CREATED + 11, { tx_hash: TX2 })), start);
  }
});

test('every RPC agreeing on the block hash with enough blocks confirms a seen payment', () => {
  const next = confirmed();
  assert.is(paymentStatus(next), 'confirmed');
  assert.is(next.context.evidence?.confirmations, 3);
  assert.is(next.context.evidence?.checked_at, CREATED + 20);
  assert.equal(next.context.evidence?.rpc_answers, [
    { rpc: RPC_A, block_hash: BLOCK },
    { rpc: RPC_B, block_hash: BLOCK },
  ]);
  assert.equal(next.context.history.at(-1), {
    status: 'confirmed',
    at: CREATED + 20,
    reason: '3 confirmations, every RPC agreeing',
    tx_hash: TX,
  });
});

test('a seen payment is not confirmed by fewer blocks than required', () => {
  const start = seen();
  assert.is(paymentCodec.step(start, confirmedEvent(2)), start);
  assert.is(paymentCodec.step(start, confirmedEvent(2.5)), start);
});

test('RPCs that disagree on the block hash, or none at all, confirm nothing', () => {
  const start = seen();
  const split = [
    { rpc: RPC_A, block_hash: BLOCK },
    { rpc: RPC_B, block_hash: OTHER_BLOCK },
  ];
  assert.is(paymentCodec.step(start, confirmedEvent(3, CREATED + 20, BLOCK, split)), start);
  const blind = [
    { rpc: RPC_A, block_hash: BLOCK },
    { rpc: RPC_B, block_hash: null },
  ];
  assert.is(paymentCodec.step(start, confirmedEvent(3, CREATED + 20, BLOCK, blind)), start);
  assert.is(paymentCodec.step(start, confirmedEvent(3, CREATED + 20, BLOCK, [])), start);
});

test('a confirmation of another block than the credited one confirms nothing', () => {
  const start = seen();
  const answers = [{ rpc: RPC_A, block_hash: OTHER_BLOCK }];
  assert.is(paymentCodec.step(start, confirmedEvent(5, CREATED + 20, OTHER_BLOCK, answers)), start);
});

test('more blocks on a confirmed payment update its confirmations, not its state or history', () => {
  const start = confirmed();
  const next = paymentCodec.step(start, confirmedEvent(7, CREATED + 40));
  assert.is(paymentStatus(next), 'confirmed');
  assert.is(next.context.evidence?.confirmations, 7);
  assert.is(next.context.evidence?.checked_at, CREATED + 40);
  assert.equal(next.context.history, start.context.history);
});

test('a confirmation count never goes back: a lower one is ignored', () => {
  const start = step(confirmed(), confirmedEvent(7, CREATED + 40));
  assert.is(paymentCodec.step(start, confirmedEvent(4, CREATED + 41)), start);
});

test('CONFIRMED is ignored in requested, final and expired', () => {
  for (const start of [requested(), final(), expired()]) {
    assert.is(paymentCodec.step(start, confirmedEvent()), start);
  }
});

test('FINAL moves a confirmed payment to final, which is terminal, evidence kept', () => {
  const next = final();
  assert.is(paymentStatus(next), 'final');
  assert.is(next.status, 'done');
  assert.equal(next.context.evidence, confirmed().context.evidence);
  assert.equal(next.context.history.at(-1), {
    status: 'final',
    at: CREATED + 30,
    reason: 'final',
    tx_hash: TX,
  });
});

test('FINAL is ignored in requested, seen and expired: nothing is final without being confirmed', () => {
  for (const start of [requested(), seen(), expired()]) {
    assert.is(paymentCodec.step(start, finalEvent()), start);
  }
});

test('a reorg sends a seen payment back to requested, evidence cleared, the dropped tx noted', () => {
  const next = step(seen(), reorged());
  assert.is(paymentStatus(next), 'requested');
  assert.is(next.context.evidence, null);
  assert.is(next.context.dropped_tx_hash, TX);
  assert.equal(next.context.history.at(-1), {
    status: 'requested',
    at: CREATED + 25,
    reason: 'reorg dropped block 100',
    tx_hash: TX,
  });
});

test('a reorg sends a confirmed payment back to requested too, with the reason it was given', () => {
  const next = step(confirmed(), {
    type: 'REORGED',
    at: CREATED + 26,
    reason: 'block 100 is gone',
  });
  assert.is(paymentStatus(next), 'requested');
  assert.is(next.context.evidence, null);
  assert.equal(next.context.history.at(-1), {
    status: 'requested',
    at: CREATED + 26,
    reason: 'block 100 is gone',
    tx_hash: TX,
  });
  assert.equal(
    next.context.history.map((entry) => entry.status),
    ['requested', 'seen', 'confirmed', 'requested'],
  );
});

test('REORGED is ignored in requested, final and expired', () => {
  for (const start of [requested(), final(), expired()]) {
    assert.is(paymentCodec.step(start, reorged()), start);
  }
});

test('after a reorg the payment can be seen again, in another block, and confirmed', () => {
  const again = step(
    seen(),
    reorged(),
    seenEvent(CREATED + 30, { block_number: 101, block_hash: OTHER_BLOCK }),
    confirmedEvent(3, CREATED + 40, OTHER_BLOCK, [{ rpc: RPC_A, block_hash: OTHER_BLOCK }]),
  );
  assert.is(paymentStatus(again), 'confirmed');
  assert.is(again.context.evidence?.block_hash, OTHER_BLOCK);
});

test('the very transaction a reorg dropped is credited when mined again after expiry; others are not', () => {
  const dropped = step(seen(), reorged());
  assert.is(paymentStatus(step(dropped, seenEvent(EXPIRES + 5, { block_number: 101 }))), 'seen');
  assert.is(paymentCodec.step(dropped, seenEvent(EXPIRES + 5, { tx_hash: TX2 })), dropped);
});

test('EXPIRE at or after expires_at moves requested to expired, which is terminal', () => {
  for (const at of [EXPIRES, EXPIRES + 1]) {
    const next = step(requested(), expire(at));
    assert.is(paymentStatus(next), 'expired');
    assert.is(next.status, 'done');
    assert.equal(next.context.history.at(-1), { status: 'expired', at, reason: 'expired unpaid' });
  }
});

test('EXPIRE before expires_at is ignored', () => {
  const start = requested();
  assert.is(paymentCodec.step(start, expire(EXPIRES - 1)), start);
  assert.is(paymentCodec.step(start, expire(CREATED)), start);
});

test('EXPIRE is ignored once a transfer is seen or confirmed, however late', () => {
  for (const start of [seen(), confirmed(), final()]) {
    assert.is(paymentCodec.step(start, expire(EXPIRES + 1_000)), start);
  }
});

test('an unknown check keeps the reported hash and says "unknown", in the same state', () => {
  const next = step(requested(), unknown());
  assert.is(paymentStatus(next), 'requested');
  assert.equal(next.context.check, {
    result: 'unknown',
    tx_hash: TX,
    reason: 'rpc-a timed out after 5000 ms',
    at: CREATED + 5,
  });
  assert.is(next.context.evidence, null, 'nothing is credited on doubt');
  assert.equal(next.context.history, requested().context.history, 'not a move');
  assert.not.ok(JSON.stringify(next.context).includes('failed'), 'never "failed"');
});

test('an unknown check of a seen or confirmed payment keeps its state and its evidence', () => {
  for (const start of [seen(), confirmed()]) {
    const next = step(start, unknown(CREATED + 50));
    assert.is(paymentStatus(next), paymentStatus(start));
    assert.equal(next.context.evidence, start.context.evidence);
    assert.is(next.context.check?.result, 'unknown');
  }
});

test('a later credit clears the unknown check', () => {
  const next = step(requested(), unknown(), seenEvent());
  assert.is(next.context.check, null);
});

test('an unknown check keeps at most PAYMENT_REASON_LIMIT characters of its reason', () => {
  const next = step(requested(), unknown(CREATED, 'x'.repeat(10_000)));
  assert.is(next.context.check?.reason.length, PAYMENT_REASON_LIMIT);
});

test('final and expired ignore every event, at any time', () => {
  const events = [CREATED, EXPIRES, EXPIRES + 1].flatMap((at) => [
    seenEvent(at),
    seenEvent(at, { tx_hash: TX2 }),
    confirmedEvent(9, at),
    finalEvent(at),
    reorged(at),
    expire(at),
    unknown(at),
  ]);
  for (const start of [final(), expired()]) {
    for (const event of events) {
      assert.is(paymentCodec.step(start, event), start, `${paymentStatus(start)} + ${event.type}`);
    }
  }
});

test('the history keeps only the newest PAYMENT_HISTORY_LIMIT moves', () => {
  let state = requested();
  for (let i = 0; i < 40; i += 1) {
    state = step(state, seenEvent(CREATED + 2 * i + 1), reorged(CREATED + 2 * i + 2));
  }
  assert.is(state.context.history.length, PAYMENT_HISTORY_LIMIT);
  assert.equal(state.context.history.at(-1), {
    status: 'requested',
    at: CREATED + 80,
    reason: 'reorg dropped block 100',
    tx_hash: TX,
  });
  assert.is(state.context.history[0]?.at, CREATED + 31, 'the oldest moves went first');
});

test('a persisted snapshot survives JSON and restores to the same state and context', () => {
  const states = [
    requested(),
    step(requested(), unknown()),
    seen(),
    confirmed(),
    final(),
    expired(),
  ];
  states.push(step(seen(), reorged()));
  for (const snapshot of states) {
    const restored = throughJson(snapshot);
    assert.is(paymentStatus(restored), paymentStatus(snapshot));
    assert.equal(restored.context, snapshot.context);
    assert.is(restored.status, snapshot.status);
  }
});

test('a payment persisted mid-way restores and goes on, its guards holding as before', () => {
  const restoredSeen = throughJson(seen());
  assert.is(paymentCodec.step(restoredSeen, confirmedEvent(2)), restoredSeen);
  assert.is(paymentCodec.step(restoredSeen, finalEvent()), restoredSeen);
  const restoredConfirmed = throughJson(step(restoredSeen, confirmedEvent()));
  const done = step(restoredConfirmed, confirmedEvent(5, CREATED + 25), finalEvent());
  assert.is(paymentStatus(done), 'final');
  assert.equal(
    done.context,
    step(confirmed(), confirmedEvent(5, CREATED + 25), finalEvent()).context,
  );
  const restoredRequested = throughJson(requested());
  assert.is(paymentCodec.step(restoredRequested, expire(EXPIRES - 1)), restoredRequested);
  assert.is(paymentStatus(step(restoredRequested, expire())), 'expired');
});

test('a restored snapshot runs in an actor without errors', () => {
  const saved = JSON.parse(JSON.stringify(paymentCodec.persist(confirmed()))) as PaymentSnapshot;
  const actor = createActor(paymentMachine, { snapshot: saved, input: undefined });
  const errors: unknown[] = [];
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  actor.send(finalEvent());
  assert.is(actor.getSnapshot().value, 'final');
  assert.equal(errors, []);
  actor.stop();
});

const weighted = <T extends Record<string, fc.Arbitrary<unknown>>>(weight: number, fields: T) => ({
  weight,
  arbitrary: fc.record(fields),
});

// Any sequence of any events: final is reached only through seen and confirmed, and nothing
// ever leaves expired or final.
test('no event sequence reaches final without seen and confirmed, nor leaves expired or final', () => {
  // Times mostly in time, often at the expiry edge, so that both ends are reached often.
  const at = fc.oneof(
    { arbitrary: fc.integer({ min: CREATED - 10, max: EXPIRES - 1 }), weight: 9 },
    { arbitrary: fc.constantFrom(EXPIRES - 1, EXPIRES, EXPIRES + 1), weight: 1 },
  );
  const hash = fc.constantFrom(BLOCK, OTHER_BLOCK);
  const otherThan = (block: string) => (block === BLOCK ? OTHER_BLOCK : BLOCK);
  // Weighted toward the moves forward, so that runs get far (the refusals still come often).
  const event: fc.Arbitrary<PaymentEvent> = fc.oneof(
    weighted(3, {
      type: fc.constant('SEEN' as const),
      at,
      evidence: fc.record({
        tx_hash: fc.constantFrom(TX, TX2),
        log_index: fc.nat(5),
        block_number: fc.nat(1_000),
        block_hash: hash,
        from: fc.constantFrom(PAYER, STRANGER),
        to: fc.constantFrom(PAYEE, DEPOSIT, STRANGER),
        amount_units: fc.constantFrom('12500000', '20000000', '0', '12499999', 'x'),
        confirmations: fc.nat(4),
        checked_at: at,
        rpc_answers: fc.constant([{ rpc: RPC_A, block_hash: BLOCK }]),
      }),
    }),
    {
      weight: 6,
      arbitrary: fc
        .record({
          confirmations: fc.integer({ min: 0, max: 10 }),
          block_hash: hash,
          answers: fc.integer({ min: 0, max: 3 }),
          oneDisagrees: fc.boolean(),
          at,
        })
        .map(({ confirmations, block_hash, answers, oneDisagrees, at }) => ({
          type: 'CONFIRMED' as const,
          confirmations,
          block_hash,
          rpc_answers: Array.from({ length: answers }, (_, i) => ({
            rpc: i % 2 === 0 ? RPC_A : RPC_B,
            block_hash: oneDisagrees && i === 0 ? otherThan(block_hash) : block_hash,
          })),
          at,
        })),
    },
    weighted(3, { type: fc.constant('FINAL' as const), at }),
    weighted(1, { type: fc.constant('REORGED' as const), at }),
    weighted(1, { type: fc.constant('EXPIRE' as const), at }),
    weighted(1, {
      type: fc.constant('CHECKED_UNKNOWN' as const),
      tx_hash: fc.constantFrom(TX, TX2),
      reason: fc.string({ maxLength: 20 }),
      at,
    }),
  ) as fc.Arbitrary<PaymentEvent>;
  const reached = { final: 0, expired: 0, reorged: 0 };
  fc.assert(
    fc.property(fc.array(event, { maxLength: 40, size: 'large' }), (events) => {
      let state = requested();
      const path: PaymentStatus[] = ['requested'];
      for (const e of events) {
        const before = paymentStatus(state);
        const next = paymentCodec.step(state, e);
        const after = paymentStatus(next);
        if (before === 'final' || before === 'expired') assert.is(next, state, `${before} left`);
        if (after === 'final') assert.is(before === 'confirmed' || before === 'final', true);
        if (after === 'confirmed') assert.ok(before === 'seen' || before === 'confirmed');
        if (after === 'seen') assert.ok(before === 'requested' || before === 'seen');
        if (after === 'expired') assert.ok(before === 'requested' || before === 'expired');
        if (after !== before) path.push(after);
        // What the machine shows always agrees with its evidence.
        assert.is(next.context.evidence === null, after === 'requested' || after === 'expired');
        state = next;
      }
      const finalAt = path.indexOf('final');
      if (finalAt !== -1) {
        assert.equal(path.slice(finalAt - 2, finalAt), ['seen', 'confirmed']);
        assert.is(finalAt, path.length - 1, 'nothing after final');
      }
      const expiredAt = path.indexOf('expired');
      if (expiredAt !== -1) assert.is(expiredAt, path.length - 1, 'nothing after expired');
      if (finalAt !== -1) reached.final += 1;
      if (expiredAt !== -1) reached.expired += 1;
      if (path.slice(1).includes('requested')) reached.reorged += 1;
    }),
    { numRuns: 500 },
  );
  // The property says something only if the runs get there.
  assert.ok(reached.final > 0, `some runs reach final (${JSON.stringify(reached)})`);
  assert.ok(reached.expired > 0, `some runs expire (${JSON.stringify(reached)})`);
  assert.ok(reached.reorged > 0, `some runs are reorged (${JSON.stringify(reached)})`);
});

test.run();
