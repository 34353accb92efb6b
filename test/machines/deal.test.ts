import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor, initialTransition } from 'xstate';
import {
  dealCodec,
  dealMachine,
  dealStatus,
  newDeal,
  type DealEvent,
  type DealSnapshot,
} from '../../machines/deal.ts';

/**
 * The deal machine as pure transitions (machines/deal.ts, held to deals-protocol.md): who may
 * agree, when a round completes, what agreeing to another version does to what was agreed,
 * who may deliver and rate, and when the deal closes.
 */
const test = suite('deal machine');

const A = 'agent-a';
const B = 'agent-b';
const C = 'agent-c';
const STRANGER = 'agent-stranger';
/** A newcomer one party brings in (a sock puppet, in the attack of issue 17, item 6). */
const S = 'agent-s';
const SHA_1 = '1'.repeat(64);
const SHA_2 = '2'.repeat(64);

const agree = (
  agent: string,
  version = 1,
  parties: string[] = [A, B],
  sha256 = version === 1 ? SHA_1 : SHA_2,
): DealEvent => ({ type: 'agree', agent, version, sha256, parties });
const deliver = (agent: string): DealEvent => ({ type: 'deliver', agent });
const rate = (rater: string, ratee: string): DealEvent => ({ type: 'rate', rater, ratee });

/** The snapshot after each event in turn, from a new deal. */
function after(...events: DealEvent[]): DealSnapshot {
  return events.reduce(dealCodec.step, newDeal('deal-1'));
}

/** A and B agreed to version 1. */
const agreedDeal = () => after(agree(A), agree(B));

/** A, B and C agreed to version 1. */
const agreedByThree = () =>
  after(agree(A, 1, [A, B, C]), agree(B, 1, [A, B, C]), agree(C, 1, [A, B, C]));

test('a new deal is a draft with no round, nothing agreed and nothing rated', () => {
  const state = newDeal('deal-1');
  assert.is(dealStatus(state), 'draft');
  assert.equal(state.context, {
    deal_id: 'deal-1',
    round: null,
    agreed: null,
    parties: [],
    rated: [],
  });
});

test('newDeal starts where the machine itself starts', () => {
  assert.equal(
    newDeal('deal-1').context,
    initialTransition(dealMachine, { deal_id: 'deal-1' })[0].context,
  );
});

test("a non-party's agree is ignored in every state: the snapshot is unchanged", () => {
  for (const start of [
    newDeal('deal-1'),
    after(agree(A)),
    agreedDeal(),
    after(agree(A), agree(B), deliver(A)),
    after(agree(A), agree(B), rate(A, B), rate(B, A)),
  ]) {
    assert.is(dealCodec.step(start, agree(STRANGER)), start, dealStatus(start));
    assert.is(
      dealCodec.step(start, agree(C, 2)),
      start,
      `${dealStatus(start)}, to another version`,
    );
  }
});

test('parties agreeing one by one stay a draft until the last one agrees', () => {
  const parties = [A, B, C];
  const first = after(agree(A, 1, parties));
  assert.is(dealStatus(first), 'draft');
  assert.equal(first.context.round, { version: 1, sha256: SHA_1, parties, agreed: [A] });
  assert.is(first.context.agreed, null);

  const second = dealCodec.step(first, agree(B, 1, parties));
  assert.is(dealStatus(second), 'draft');
  assert.equal(second.context.round?.agreed, [A, B]);
  assert.is(second.context.agreed, null);

  const third = dealCodec.step(second, agree(C, 1, parties));
  assert.is(dealStatus(third), 'agreed');
  assert.is(third.context.round, null, 'the complete round is no longer open');
  assert.equal(third.context.agreed, { version: 1, sha256: SHA_1, parties, agreed: [A, B, C] });
});

test('a party agreeing twice to the same version counts once', () => {
  const twice = after(agree(A, 1, [A, B, C]), agree(A, 1, [A, B, C]));
  assert.is(dealStatus(twice), 'draft');
  assert.equal(twice.context.round?.agreed, [A]);
});

test('the round completes only when every party of that version agreed to it, not the parties of an earlier one', () => {
  // Version 2 adds C: A and B agreeing to it is not enough.
  const two = after(agree(A, 2, [A, B, C]), agree(B, 2, [A, B, C]));
  assert.is(dealStatus(two), 'draft');
  assert.is(two.context.agreed, null);
  assert.equal(two.context.round?.parties, [A, B, C]);
  assert.is(dealStatus(dealCodec.step(two, agree(C, 2, [A, B, C]))), 'agreed');
});

test('agreements to different versions do not add up to one agreed round', () => {
  const mixed = after(agree(A, 1), agree(B, 2));
  assert.is(dealStatus(mixed), 'draft');
  assert.is(mixed.context.agreed, null);
  assert.is(mixed.context.round?.version, 2, 'the round open is the version agreed to last');
});

test('agreeing to another version after agreement opens a new round while `agreed` keeps the old', () => {
  const start = agreedDeal();
  const next = dealCodec.step(start, agree(A, 2));
  assert.is(dealStatus(next), 'agreed');
  assert.equal(next.context.agreed, start.context.agreed);
  assert.equal(next.context.round, { version: 2, sha256: SHA_2, parties: [A, B], agreed: [A] });
});

test('completing the new round replaces `agreed`, closes the round and resets the ratings', () => {
  const rated = after(agree(A), agree(B), rate(A, B));
  assert.equal(rated.context.rated, [`${A}>${B}`]);
  const next = after(agree(A), agree(B), rate(A, B), agree(A, 2), agree(B, 2));
  assert.is(dealStatus(next), 'agreed');
  assert.equal(next.context.agreed, { version: 2, sha256: SHA_2, parties: [A, B], agreed: [A, B] });
  assert.is(next.context.round, null);
  assert.equal(next.context.rated, [], 'ratings of the old round do not count toward closing');
  // Under the new agreement one rating each way is needed again to close.
  assert.is(dealStatus(dealCodec.step(next, rate(B, A))), 'agreed');
});

test('a new round completing brings a delivered or closed deal back to agreed', () => {
  const delivered = after(agree(A), agree(B), deliver(A));
  assert.is(dealStatus(delivered), 'delivered');
  const fromDelivered = after(agree(A), agree(B), deliver(A), agree(A, 2), agree(B, 2));
  assert.is(dealStatus(fromDelivered), 'agreed');
  assert.is(fromDelivered.context.agreed?.version, 2);

  const fromClosed = after(agree(A), agree(B), rate(A, B), rate(B, A), agree(B, 2), agree(A, 2));
  assert.is(dealStatus(fromClosed), 'agreed');
  assert.is(fromClosed.context.agreed?.version, 2);
  assert.equal(fromClosed.context.rated, []);
});

test('a new round of a closed deal that is not complete leaves it closed with what was agreed', () => {
  const closed = after(agree(A), agree(B), rate(A, B), rate(B, A));
  const next = dealCodec.step(closed, agree(A, 2));
  assert.is(dealStatus(next), 'closed');
  assert.is(next.context.agreed?.version, 1);
  assert.equal(next.context.round?.agreed, [A]);
});

test('a round that drops a party of what was agreed does not complete while only the others agree', () => {
  // A and C agreed to version 1; A brings in S, version 2 names A and S, and both agree to it.
  const start = after(agree(A, 1, [A, C]), agree(C, 1, [A, C]));
  const ejecting = after(
    agree(A, 1, [A, C]),
    agree(C, 1, [A, C]),
    agree(A, 2, [A, S]),
    agree(S, 2, [A, S]),
  );
  assert.is(dealStatus(ejecting), 'agreed');
  assert.equal(ejecting.context.agreed, start.context.agreed, 'version 1 is still what was agreed');
  assert.equal(ejecting.context.round, {
    version: 2,
    sha256: SHA_2,
    parties: [A, S],
    agreed: [A, S],
  });
  assert.equal(ejecting.context.parties, [A, C]);
  // C keeps its rights, S has none yet.
  assert.equal(dealCodec.step(ejecting, rate(C, A)).context.rated, [`${C}>${A}`]);
  assert.is(dealStatus(dealCodec.step(ejecting, deliver(C))), 'delivered');
  assert.is(dealCodec.step(ejecting, rate(S, A)), ejecting, 'S cannot rate');
  assert.is(dealCodec.step(ejecting, rate(A, S)), ejecting, 'nor be rated');
  assert.is(dealCodec.step(ejecting, deliver(S)), ejecting, 'nor deliver');
});

test('a party of what was agreed may agree to a version that does not name it, and the round needs it', () => {
  const ejecting = after(
    agree(A, 1, [A, C]),
    agree(C, 1, [A, C]),
    agree(A, 2, [A, S]),
    agree(S, 2, [A, S]),
  );
  const consented = dealCodec.step(ejecting, agree(C, 2, [A, S]));
  assert.is(dealStatus(consented), 'agreed');
  assert.equal(consented.context.agreed, {
    version: 2,
    sha256: SHA_2,
    parties: [A, S],
    agreed: [A, S, C],
  });
  assert.is(consented.context.round, null);
  assert.equal(consented.context.parties, [A, C, S], 'C stays a party of the deal, S joins');
  // The order of agreements does not matter: C first, then A and S.
  const otherOrder = after(
    agree(A, 1, [A, C]),
    agree(C, 1, [A, C]),
    agree(C, 2, [A, S]),
    agree(A, 2, [A, S]),
  );
  assert.is(otherOrder.context.agreed?.version, 1, 'S has not agreed yet');
  assert.is(dealCodec.step(otherOrder, agree(S, 2, [A, S])).context.agreed?.version, 2);
});

test('a party dropped with its own agreement keeps its rights, and closing needs only the parties of what is agreed now', () => {
  const dropped = after(
    agree(A, 1, [A, C]),
    agree(C, 1, [A, C]),
    agree(A, 2, [A, S]),
    agree(S, 2, [A, S]),
    agree(C, 2, [A, S]),
  );
  assert.is(dealStatus(dealCodec.step(dropped, deliver(C))), 'delivered', 'C still delivers');
  const ratedByC = dealCodec.step(dealCodec.step(dropped, rate(C, A)), rate(A, C));
  assert.equal(ratedByC.context.rated, [`${C}>${A}`, `${A}>${C}`], 'C rates and is rated');
  assert.is(dealStatus(ratedByC), 'agreed');
  assert.is(
    dealStatus(
      after(
        agree(A, 1, [A, C]),
        agree(C, 1, [A, C]),
        agree(A, 2, [A, S]),
        agree(S, 2, [A, S]),
        agree(C, 2, [A, S]),
        rate(A, S),
        rate(S, A),
      ),
    ),
    'closed',
  );
  // C and S never shared a version, yet both are parties of the deal: C was a party of version 1
  // and agreed to version 2, which names S.
  assert.is(dealCodec.step(dropped, rate(C, S)).context.rated.length, 1);
});

test('a later round needs the parties of what is agreed now, not those dropped earlier with their agreement', () => {
  const dropped = after(
    agree(A, 1, [A, C]),
    agree(C, 1, [A, C]),
    agree(A, 2, [A, S]),
    agree(S, 2, [A, S]),
    agree(C, 2, [A, S]),
  );
  const SHA_3 = '3'.repeat(64);
  assert.is(
    dealCodec.step(dropped, agree(C, 3, [A, S], SHA_3)),
    dropped,
    'C is not asked any more',
  );
  const third = after(
    agree(A, 1, [A, C]),
    agree(C, 1, [A, C]),
    agree(A, 2, [A, S]),
    agree(S, 2, [A, S]),
    agree(C, 2, [A, S]),
    agree(A, 3, [A, S], SHA_3),
    agree(S, 3, [A, S], SHA_3),
  );
  assert.is(third.context.agreed?.version, 3);
  assert.equal(third.context.parties, [A, C, S], 'and it stays a party of the deal');
  assert.equal(dealCodec.step(third, rate(C, A)).context.rated, [`${C}>${A}`]);
});

test('a round that adds a party needs every party of what was agreed too, also those it no longer names', () => {
  // Version 2 names B and C only: A (of version 1) must agree too, and so must C (new).
  const start = agreedDeal();
  const partial = after(agree(A), agree(B), agree(B, 2, [B, C]), agree(C, 2, [B, C]));
  assert.equal(partial.context.agreed, start.context.agreed);
  const done = dealCodec.step(partial, agree(A, 2, [B, C]));
  assert.is(done.context.agreed?.version, 2);
  assert.equal(done.context.parties, [A, B, C]);
});

test('nobody delivers before agreement: deliver in a draft is ignored', () => {
  for (const start of [newDeal('deal-1'), after(agree(A))]) {
    assert.is(dealCodec.step(start, deliver(A)), start);
  }
});

test('a party of what was agreed delivers: the deal is delivered', () => {
  for (const by of [A, B]) {
    const next = dealCodec.step(agreedDeal(), deliver(by));
    assert.is(dealStatus(next), 'delivered', by);
    assert.equal(next.context, agreedDeal().context, 'delivering changes no context');
  }
});

test('only a party of what was agreed delivers, not a stranger nor a party of an open round', () => {
  // C is a party of version 2 only, which A has agreed to but B not yet.
  const start = after(agree(A), agree(B), agree(C, 2, [A, B, C]));
  assert.equal(start.context.round?.agreed, [C]);
  assert.is(dealCodec.step(start, deliver(C)), start);
  assert.is(dealCodec.step(start, deliver(STRANGER)), start);
  const delivered = dealCodec.step(start, deliver(A));
  assert.is(dealStatus(delivered), 'delivered');
  assert.is(dealStatus(dealCodec.step(delivered, deliver(STRANGER))), 'delivered');
});

test('delivering again keeps a deal delivered, and a delivery after closing keeps it closed', () => {
  const delivered = after(agree(A), agree(B), deliver(A));
  assert.is(dealStatus(dealCodec.step(delivered, deliver(B))), 'delivered');
  const closed = after(agree(A), agree(B), rate(A, B), rate(B, A));
  assert.is(dealStatus(dealCodec.step(closed, deliver(A))), 'closed');
});

test('nobody rates before agreement: rate in a draft is ignored', () => {
  for (const start of [newDeal('deal-1'), after(agree(A))]) {
    assert.is(dealCodec.step(start, rate(A, B)), start);
  }
});

test('a party never rates itself, and no rating names a non-party on either side', () => {
  for (const start of [agreedDeal(), after(agree(A), agree(B), deliver(A))]) {
    for (const event of [rate(A, A), rate(A, STRANGER), rate(STRANGER, A), rate(C, B)]) {
      assert.is(
        dealCodec.step(start, event),
        start,
        `${dealStatus(start)} + ${JSON.stringify(event)}`,
      );
    }
  }
  const closed = after(agree(A), agree(B), rate(A, B), rate(B, A));
  for (const event of [rate(A, A), rate(A, STRANGER), rate(STRANGER, B)]) {
    assert.is(dealCodec.step(closed, event), closed, `closed + ${JSON.stringify(event)}`);
  }
});

test('a party of an open round but not of what was agreed cannot rate nor be rated', () => {
  const start = after(agree(A), agree(B), agree(C, 2, [A, B, C]));
  assert.is(dealCodec.step(start, rate(C, A)), start);
  assert.is(dealCodec.step(start, rate(A, C)), start);
});

test('a rating after agreement is recorded as a rater>ratee pair, once however often it is corrected', () => {
  const once = dealCodec.step(agreedDeal(), rate(A, B));
  assert.is(dealStatus(once), 'agreed');
  assert.equal(once.context.rated, [`${A}>${B}`]);
  const corrected = dealCodec.step(once, rate(A, B));
  assert.equal(corrected.context.rated, [`${A}>${B}`]);
  assert.is(dealStatus(corrected), 'agreed');
});

test('the deal closes once every party rated every other, from agreed or delivered', () => {
  assert.is(dealStatus(after(agree(A), agree(B), rate(A, B), rate(B, A))), 'closed');
  assert.is(dealStatus(after(agree(A), agree(B), deliver(B), rate(B, A), rate(A, B))), 'closed');
});

test('with three parties the deal closes only with the sixth pair rated', () => {
  const pairs: [string, string][] = [
    [A, B],
    [A, C],
    [B, A],
    [B, C],
    [C, A],
    [C, B],
  ];
  let state = dealCodec.step(agreedByThree(), deliver(C));
  for (const [i, [rater, ratee]] of pairs.entries()) {
    // Rating one pair twice never stands in for another pair.
    state = dealCodec.step(dealCodec.step(state, rate(rater, ratee)), rate(rater, ratee));
    const expected = i === pairs.length - 1 ? 'closed' : 'delivered';
    assert.is(dealStatus(state), expected, `after ${i + 1} pairs`);
  }
  assert.is(state.context.rated.length, 6);
});

test('corrections in a closed deal keep it closed', () => {
  const closed = after(agree(A), agree(B), rate(A, B), rate(B, A));
  const corrected = dealCodec.step(dealCodec.step(closed, rate(A, B)), rate(B, A));
  assert.is(dealStatus(corrected), 'closed');
  assert.equal(corrected.context.rated, closed.context.rated);
});

test('a persisted snapshot survives JSON and restores to the same state and context', () => {
  const snapshots = [
    newDeal('deal-1'),
    after(agree(A)),
    agreedDeal(),
    after(agree(A), agree(B), agree(A, 2)),
    after(agree(A), agree(B), deliver(A), rate(A, B)),
    after(agree(A), agree(B), rate(A, B), rate(B, A)),
  ];
  for (const snapshot of snapshots) {
    const saved = JSON.parse(JSON.stringify(dealCodec.persist(snapshot))) as unknown;
    const restored = dealCodec.restore(saved);
    assert.is(dealStatus(restored), dealStatus(snapshot));
    assert.equal(restored.context, snapshot.context);
  }
});

test('a restored deal goes on as before: its guards hold and its rounds complete', () => {
  const restore = (snapshot: DealSnapshot) =>
    dealCodec.restore(JSON.parse(JSON.stringify(dealCodec.persist(snapshot))));
  const draft = restore(after(agree(A)));
  assert.is(dealCodec.step(draft, agree(STRANGER)), draft);
  assert.is(dealCodec.step(draft, deliver(A)), draft);
  assert.is(dealStatus(dealCodec.step(draft, agree(B))), 'agreed');

  const reopened = restore(after(agree(A), agree(B), rate(A, B), agree(A, 2)));
  assert.is(dealStatus(dealCodec.step(reopened, rate(B, A))), 'closed');
  const replaced = dealCodec.step(reopened, agree(B, 2));
  assert.is(replaced.context.agreed?.version, 2);
  assert.equal(replaced.context.rated, []);
});

test('a snapshot saved before the deal kept its parties restores them from what was agreed', () => {
  const saved = JSON.parse(JSON.stringify(dealCodec.persist(agreedDeal()))) as {
    context: Record<string, unknown>;
  };
  delete saved.context.parties;
  const restored = dealCodec.restore(saved);
  assert.equal(restored.context.parties, [A, B]);
  assert.equal(dealCodec.step(restored, rate(A, B)).context.rated, [`${A}>${B}`]);
  const draft = JSON.parse(JSON.stringify(dealCodec.persist(after(agree(A))))) as {
    context: Record<string, unknown>;
  };
  delete draft.context.parties;
  assert.equal(dealCodec.restore(draft).context.parties, []);
});

test('a restored snapshot runs in an actor without errors', () => {
  const saved = JSON.parse(JSON.stringify(dealCodec.persist(agreedDeal()))) as DealSnapshot;
  const actor = createActor(dealMachine, { snapshot: saved, input: undefined });
  const errors: unknown[] = [];
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  actor.send(deliver(A));
  assert.is(actor.getSnapshot().value, 'delivered');
  assert.equal(errors, []);
  actor.stop();
});

test.run();
