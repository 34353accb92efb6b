import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  MAX_WRONG_CODES,
  notificationEmailCodec,
  notificationEmailFromRow,
  notificationEmailStatus,
  type NotificationEmailEvent,
  type NotificationEmailSnapshot,
} from '../../machines/notification-email.ts';

const test = suite('notification email machine');

const codec = notificationEmailCodec;
const fresh = () => codec.start({ wrong_codes: 0 });
const run = (events: NotificationEmailEvent[], from = fresh()) =>
  events.reduce((snapshot, event) => codec.step(snapshot, event), from);
const wrong: NotificationEmailEvent = { type: 'confirm_code', matches: false };
const right: NotificationEmailEvent = { type: 'confirm_code', matches: true };

/** The snapshot after a trip through its stored form, as every write and read makes it. */
const stored = (snapshot: NotificationEmailSnapshot) =>
  codec.restore(JSON.parse(JSON.stringify(codec.persist(snapshot))));

test('a new address is pending with no wrong codes', () => {
  const state = fresh();
  assert.is(notificationEmailStatus(state), 'pending');
  assert.equal(state.context, { wrong_codes: 0 });
});

test('the right code or the link confirms a pending address', () => {
  assert.is(notificationEmailStatus(run([right])), 'confirmed');
  assert.is(notificationEmailStatus(run([{ type: 'confirm_link' }])), 'confirmed');
  assert.is(notificationEmailStatus(run([wrong, wrong, right])), 'confirmed');
});

test('the fifth wrong code voids it, and nothing but a new address leaves voided', () => {
  const four = run(Array(MAX_WRONG_CODES - 1).fill(wrong));
  assert.is(notificationEmailStatus(four), 'pending');
  assert.is(four.context.wrong_codes, MAX_WRONG_CODES - 1);
  const voided = codec.step(four, wrong);
  assert.is(notificationEmailStatus(voided), 'voided');
  assert.is(notificationEmailStatus(run([right], voided)), 'voided');
  assert.is(notificationEmailStatus(run([{ type: 'confirm_link' }], voided)), 'voided');
  const again = codec.step(voided, { type: 'set' });
  assert.is(notificationEmailStatus(again), 'pending');
  assert.is(again.context.wrong_codes, 0);
});

test('confirmed, it takes no code and no link; it unsubscribes; a new set starts over', () => {
  const confirmed = run([right]);
  assert.is(
    notificationEmailStatus(run([wrong, { type: 'confirm_link' }], confirmed)),
    'confirmed',
  );
  const gone = codec.step(confirmed, { type: 'unsubscribe' });
  assert.is(notificationEmailStatus(gone), 'unsubscribed');
  assert.is(notificationEmailStatus(run([right, { type: 'confirm_link' }], gone)), 'unsubscribed');
  assert.is(notificationEmailStatus(codec.step(gone, { type: 'set' })), 'pending');
});

test('a pending address unsubscribes too (the confirmation email carries the link)', () => {
  assert.is(notificationEmailStatus(run([{ type: 'unsubscribe' }])), 'unsubscribed');
});

test('every snapshot survives its stored form, and the row columns rebuild the same state', () => {
  const paths: NotificationEmailEvent[][] = [
    [],
    [wrong, wrong],
    [right],
    Array(MAX_WRONG_CODES).fill(wrong),
    [right, { type: 'unsubscribe' }],
    [wrong, { type: 'set' }],
  ];
  for (const path of paths) {
    const snapshot = run(path);
    const back = stored(snapshot);
    assert.is(notificationEmailStatus(back), notificationEmailStatus(snapshot));
    assert.equal(back.context, snapshot.context);
    const fromRow = notificationEmailFromRow({
      status: notificationEmailStatus(snapshot),
      wrongCodes: snapshot.context.wrong_codes,
    });
    assert.equal(codec.persist(fromRow), codec.persist(snapshot));
    // And it goes on from there as the original would.
    assert.equal(
      codec.persist(codec.step(fromRow, wrong)),
      codec.persist(codec.step(snapshot, wrong)),
    );
  }
});

test.run();
