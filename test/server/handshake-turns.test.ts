import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HandshakeTurns } from '../../server/socket/handshake-turns.ts';

/**
 * A crowd of socket.io handshakes takes turns with everything else the process serves: each is
 * let through on a turn of the event loop of its own, so the loop polls for I/O (HTTP requests,
 * /health) between two of them, rather than running the whole crowd in one go.
 */
const test = suite('socket.io handshakes take turns');

/** Resolves when `turns` lets this one through. */
const turnOf = (turns: HandshakeTurns) => new Promise<void>((resolve) => turns.take(resolve));

test('each handshake is let through on a turn of the loop of its own, in the order they asked', async () => {
  const turns = new HandshakeTurns();
  const order: string[] = [];
  const asked = [0, 1, 2].map((i) =>
    turnOf(turns).then(() => {
      order.push(`turn ${i}`);
      // Work the first handshake leaves for the loop's next turn runs before the third.
      if (i === 0) setImmediate(() => order.push('what turn 0 left for the next turn'));
    }),
  );
  assert.is(turns.queued, 3);
  await Promise.all(asked);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(order, ['turn 0', 'turn 1', 'what turn 0 left for the next turn', 'turn 2']);
  assert.is(turns.queued, 0);
});

test('a long crowd is let through whole, and the queue is emptied as it goes', async () => {
  const turns = new HandshakeTurns();
  const count = 5_000;
  let through = 0;
  let mostQueued = 0;
  await Promise.all(
    Array.from({ length: count }, () =>
      turnOf(turns).then(() => {
        through++;
        mostQueued = Math.max(mostQueued, turns.queued);
      }),
    ),
  );
  assert.is(through, count);
  assert.is(mostQueued, count - 1);
  assert.is(turns.queued, 0);
  // Those who ask after the crowd still get their turn.
  await turnOf(turns);
});

test('a lone handshake goes through at once; one more in the same turn of the loop waits for the next', async () => {
  const turns = new HandshakeTurns();
  const order: string[] = [];
  turns.takeNowOrLater(() => order.push('first'));
  assert.equal(order, ['first']);
  const second = new Promise<void>((resolve) =>
    turns.takeNowOrLater(() => {
      order.push('second');
      resolve();
    }),
  );
  assert.is(turns.queued, 1);
  await second;
  assert.equal(order, ['first', 'second']);
  // Once a turn of the loop has gone by with none waiting, the next goes through at once.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  turns.takeNowOrLater(() => order.push('third'));
  assert.equal(order, ['first', 'second', 'third']);
});

test.run();
