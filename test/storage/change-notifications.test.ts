import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  CHANGES_CHANNEL,
  changeNotifications,
  parseChangeNotification,
  type StoredChangeRow,
} from '../../storage/kernel/changes.ts';

/**
 * Other processes hear of a write's changes by NOTIFY: one notification names as many agents as
 * fit under PostgreSQL's payload limit (8,000 bytes), so a listing told to 1,000 watchers is a
 * handful of notifications, not 1,000, and none is refused for its size.
 */
const test = suite('change notifications');

const sender = randomUUID();

function changesFor(agents: string[], seq: (i: number) => number): StoredChangeRow[] {
  return agents.map((agentId, i) => ({ agentId, seq: seq(i) }) as StoredChangeRow);
}

test('a write that reaches 1,000 agents names each once, in notifications PostgreSQL takes', () => {
  const agents = Array.from({ length: 1000 }, () => randomUUID());
  const notifications = changeNotifications(
    sender,
    changesFor(agents, (i) => 1_000_000_000_000_000 + i),
  );
  assert.ok(notifications.length > 1, 'more than one notification');
  assert.ok(notifications.length < 10, `${notifications.length} notifications`);
  const heard = new Map<string, number>();
  for (const { channel, payload } of notifications) {
    assert.is(channel, CHANGES_CHANNEL);
    assert.ok(Buffer.byteLength(payload) < 8000, `${Buffer.byteLength(payload)} bytes`);
    const parsed = parseChangeNotification(payload);
    assert.is(parsed.sender, sender);
    for (const [agentId, seq] of parsed.heads) {
      assert.not.ok(heard.has(agentId), 'named once');
      heard.set(agentId, seq);
    }
  }
  assert.equal(
    [...heard],
    agents.map((agentId, i) => [agentId, 1_000_000_000_000_000 + i]),
  );
});

test("an agent's several changes in one write name its newest sequence number only", () => {
  const agent = randomUUID();
  const [notification, ...rest] = changeNotifications(
    sender,
    changesFor([agent, agent, agent], (i) => [5, 7, 6][i] as number),
  );
  assert.is(rest.length, 0);
  assert.equal(parseChangeNotification(notification?.payload ?? '').heads, [[agent, 7]]);
});

test('a write that reaches no agent notifies no one', () => {
  assert.equal(changeNotifications(sender, []), []);
});

test('a payload of another form names no agent', () => {
  assert.equal(parseChangeNotification('').heads, []);
  assert.equal(parseChangeNotification(`${sender}`).heads, []);
  assert.equal(parseChangeNotification(`${sender} ${randomUUID()}`).heads, []);
  assert.equal(parseChangeNotification(`${sender} ${randomUUID()} x`).heads, []);
});

test.run();
