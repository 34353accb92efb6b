import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SqlSlots, type SqlSlotLimits } from '../../actors/index/sql-slots.ts';
import { SqlTimeoutBudget } from '../../actors/index/sql-timeout-budget.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { TestClock } from '../helpers/clock.ts';

const LIMITS: SqlSlotLimits = { running: 1, perAgent: 2, maxWaitMs: 60_000, maxWaiting: 200 };

/** What `acquire` settled with: a release, or the refusal. */
const outcome = (taking: Promise<() => void>) =>
  taking.then(
    (release) => ({ release, refusal: null }),
    (refusal: unknown) => {
      if (!(refusal instanceof ServiceError)) throw refusal;
      return { release: null, refusal };
    },
  );

test('one agent holds at most two queries running or waiting; the third is refused 429 too_many_queries with Retry-After', async () => {
  const slots = new SqlSlots({ ...LIMITS, running: 30 });
  const first = await slots.acquire('greedy');
  const second = await slots.acquire('greedy');
  const third = await outcome(slots.acquire('greedy'));
  assert.is(third.refusal?.code, 'too_many_queries');
  assert.is(third.refusal?.status, 429);
  assert.equal(third.refusal?.responseHeaders, { 'retry-after': '1' });
  assert.is(third.refusal?.extra.limit, 2);
  assert.equal(slots.counts(), { running: 2, waiting: 0 }, 'the refused query took nothing');
  first();
  second();
  assert.ok((await outcome(slots.acquire('greedy'))).release, 'places come back as queries end');
});

test('an agent with nothing running is served next, ahead of the waiting queries of ten greedy agents', async () => {
  const slots = new SqlSlots(LIMITS);
  const order: string[] = [];
  const greedy = Array.from({ length: 10 }, (_, i) => `greedy-${i}`);
  const waits: Promise<void>[] = [];
  const take = (agent: string) =>
    slots.acquire(agent).then((release) => {
      order.push(agent);
      return release;
    });
  const releases: Promise<() => void>[] = [];
  for (const agent of greedy) for (let i = 0; i < 2; i++) releases.push(take(agent));
  assert.equal(slots.counts(), { running: 1, waiting: 19 });
  const innocent = take('innocent');
  // Each greedy agent's third query is refused, not queued.
  for (const agent of greedy)
    assert.is((await outcome(slots.acquire(agent))).refusal?.code, 'too_many_queries');
  (await releases[0]!)();
  (await innocent)();
  assert.equal(order.slice(0, 2), ['greedy-0', 'innocent'], order.join(' '));
  // Then every greedy agent gets its first query through before any gets its second.
  for (const release of releases.slice(1)) waits.push(release.then((end) => end()));
  await Promise.all(waits);
  const rest = order.slice(2);
  assert.equal(new Set(rest.slice(0, 9)).size, 9, rest.join(' '));
  assert.equal(slots.counts(), { running: 0, waiting: 0 });
});

test('a query that waits past the bound is refused 429 rate_limited with Retry-After, and gives its place back', async () => {
  const slots = new SqlSlots({ ...LIMITS, maxWaitMs: 20 });
  const holding = await slots.acquire('a');
  const waited = await outcome(slots.acquire('b'));
  assert.is(waited.refusal?.code, 'rate_limited');
  assert.ok(waited.refusal?.responseHeaders['retry-after']);
  assert.equal(slots.counts(), { running: 1, waiting: 0 });
  holding();
  assert.ok((await outcome(slots.acquire('b'))).release);
});

test('queries past the waiting bound are refused at once', async () => {
  const slots = new SqlSlots({ ...LIMITS, maxWaiting: 3 });
  const holding = await slots.acquire('holder');
  const queued = ['a', 'b', 'c'].map((agent) => slots.acquire(agent));
  const refused = await outcome(slots.acquire('d'));
  assert.is(refused.refusal?.code, 'rate_limited');
  assert.equal(slots.counts(), { running: 1, waiting: 3 });
  holding();
  for (const waiting of queued) (await waiting)();
  assert.equal(slots.counts(), { running: 0, waiting: 0 });
});

test("the total timeout budget counts timeouts, never other agents' running queries", async () => {
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 30 }, new TestClock());
  // Ten agents with three queries each running: the old budget's 30 places all taken.
  for (let i = 0; i < 10; i++) for (let j = 0; j < 3; j++) await budget.admit(`greedy-${i}`);
  const settle = await budget.admit('innocent');
  await settle(false);
});

test.run();
