import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { insertAgent } from '../../storage/agents/agents.ts';
import {
  appendChanges,
  CHANGES_CHANNEL,
  PAIRS_PER_NOTIFICATION,
  parseChangeNotification,
  type ChangeDraft,
} from '../../storage/kernel/changes.ts';
import type { Driver } from '../../storage/driver.ts';
import { openTestDriver, postgresSuite } from '../helpers/storage.ts';

/**
 * Other processes hear of a write's changes by NOTIFY, queued by the very statement that
 * records them (one round trip): one notification names up to PAIRS_PER_NOTIFICATION agents,
 * each with its newest number, so a listing told to 1,000 watchers is a handful of
 * notifications, not 1,000, and none is refused for its size (PostgreSQL's limit is 8,000
 * bytes). Heard here through the driver's own LISTEN, as another process hears them.
 */
const test = postgresSuite<{ driver: Driver; heard: Map<string, string[]> }>(
  'change notifications on postgres',
);

const sender = randomUUID();
const OTHER_CHANNEL = 'change_notifications_test';

test.before(async (context) => {
  context.driver = await openTestDriver('postgres');
  context.heard = new Map();
  for (const channel of [CHANGES_CHANNEL, OTHER_CHANNEL]) {
    await context.driver.listen?.(channel, (payload) => {
      const list = context.heard.get(channel) ?? [];
      list.push(payload);
      context.heard.set(channel, list);
    });
  }
});
test.after(async ({ driver }) => {
  await driver.close();
});

async function agents(driver: Driver, count: number, head = 0): Promise<string[]> {
  const ids = Array.from({ length: count }, () => randomUUID());
  await driver.transaction(async (tx) => {
    for (const agentId of ids) await insertAgent(tx, { agentId, name: 'told' });
    await tx.query('update feed_heads set last_seq = $2 where agent_id = any($1::uuid[])', [
      ids,
      head,
    ]);
  });
  return ids;
}

/** Waits until `count` notifications of `channel` came after `from`, and answers them. */
async function heardAfter(
  heard: Map<string, string[]>,
  channel: string,
  from: number,
  count: number,
): Promise<string[]> {
  for (;;) {
    const list = heard.get(channel) ?? [];
    if (list.length >= from + count) return list.slice(from);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const told = (agentId: string, n: number): ChangeDraft<string> => ({
  agentId,
  type: 'test.told',
  data: { n },
});

test('a write that reaches 1,000 agents names each once with its number, in notifications PostgreSQL takes', async ({
  driver,
  heard,
}) => {
  // Numbers of 16 digits: the longest pairs a payload must hold.
  const ids = await agents(driver, 1000, 1_000_000_000_000_000);
  const from = heard.get(CHANGES_CHANNEL)?.length ?? 0;
  const expected = Math.ceil(1000 / PAIRS_PER_NOTIFICATION);
  const stored = await driver.transaction((tx) =>
    appendChanges(
      tx,
      ids.map((id, i) => told(id, i)),
      (text, params) => tx.lastQuery(text, params),
      false,
      { sender, also: [] },
    ),
  );
  const payloads = await heardAfter(heard, CHANGES_CHANNEL, from, expected);
  assert.is(payloads.length, expected, `${expected} notifications`);
  const named = new Map<string, number>();
  for (const payload of payloads) {
    assert.ok(Buffer.byteLength(payload) < 8000, `${Buffer.byteLength(payload)} bytes`);
    const parsed = parseChangeNotification(payload);
    assert.is(parsed.sender, sender);
    for (const [agentId, seq] of parsed.heads) {
      assert.not.ok(named.has(agentId), 'named once');
      named.set(agentId, seq);
    }
  }
  assert.equal(
    new Map(stored.map((s) => [s.agentId, s.seq])),
    named,
    'every agent with the number it was given',
  );
  assert.is(named.get(ids[0] as string), 1_000_000_000_000_001);
});

test("an agent's several changes in one write name its newest number, beside the transaction's other notifications", async ({
  driver,
  heard,
}) => {
  const [a, b] = await agents(driver, 2);
  const from = heard.get(CHANGES_CHANNEL)?.length ?? 0;
  const otherFrom = heard.get(OTHER_CHANNEL)?.length ?? 0;
  await driver.transaction((tx) =>
    appendChanges(
      tx,
      [told(a as string, 1), told(b as string, 2), told(a as string, 3)],
      (text, params) => tx.lastQuery(text, params),
      false,
      { sender, also: [{ channel: OTHER_CHANNEL, payload: 'also this' }] },
    ),
  );
  const [payload] = await heardAfter(heard, CHANGES_CHANNEL, from, 1);
  const heads = new Map(parseChangeNotification(payload as string).heads);
  assert.equal(
    heads,
    new Map([
      [a as string, 2],
      [b as string, 1],
    ]),
  );
  assert.equal(await heardAfter(heard, OTHER_CHANNEL, otherFrom, 1), ['also this']);
});

test('a single change tells its agent and the other notifications in its own statement', async ({
  driver,
  heard,
}) => {
  const [a] = await agents(driver, 1, 41);
  const from = heard.get(CHANGES_CHANNEL)?.length ?? 0;
  const otherFrom = heard.get(OTHER_CHANNEL)?.length ?? 0;
  await driver.transaction((tx) =>
    appendChanges(tx, [told(a as string, 1)], (text, params) => tx.lastQuery(text, params), false, {
      sender,
      also: [{ channel: OTHER_CHANNEL, payload: 'and this' }],
    }),
  );
  const [payload] = await heardAfter(heard, CHANGES_CHANNEL, from, 1);
  assert.equal(parseChangeNotification(payload as string), { sender, heads: [[a as string, 42]] });
  assert.equal(await heardAfter(heard, OTHER_CHANNEL, otherFrom, 1), ['and this']);
});

test('the changes and their notifications are one flight: BEGIN, the statement, COMMIT', async ({
  driver,
  heard,
}) => {
  const ids = await agents(driver, 3);
  const from = heard.get(CHANGES_CHANNEL)?.length ?? 0;
  for (const drafts of [ids.map((id, i) => told(id, i)), [told(ids[0] as string, 9)]]) {
    const before = driver.roundTrips();
    await driver.transaction((tx) =>
      appendChanges(tx, drafts, (text, params) => tx.lastQuery(text, params), false, {
        sender,
        also: [{ channel: OTHER_CHANNEL, payload: 'one flight' }],
      }),
    );
    assert.is(driver.roundTrips() - before, 3, `${drafts.length} drafts`);
  }
  await heardAfter(heard, CHANGES_CHANNEL, from, 2);
});

test('a write that rolls back tells no one', async ({ driver, heard }) => {
  const [a] = await agents(driver, 1);
  const from = heard.get(CHANGES_CHANNEL)?.length ?? 0;
  await driver
    .transaction(async (tx) => {
      await appendChanges(tx, [told(a as string, 1), told(a as string, 2)], undefined, false, {
        sender,
        also: [],
      });
      throw new Error('rolled back');
    })
    .catch(() => undefined);
  // A later write's notification arrives; the rolled-back one never came before it.
  const [b] = await agents(driver, 1);
  await driver.transaction((tx) =>
    appendChanges(tx, [told(b as string, 1)], undefined, false, { sender, also: [] }),
  );
  const [payload] = await heardAfter(heard, CHANGES_CHANNEL, from, 1);
  assert.equal(parseChangeNotification(payload as string).heads, [[b as string, 1]]);
});

test.run();

const parsing = suite('change notifications, read');

parsing('a payload of another form names no agent', () => {
  assert.equal(parseChangeNotification('').heads, []);
  assert.equal(parseChangeNotification(`${sender}`).heads, []);
  assert.equal(parseChangeNotification(`${sender} ${randomUUID()}`).heads, []);
  assert.equal(parseChangeNotification(`${sender} ${randomUUID()} x`).heads, []);
});

parsing.run();
