import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SqlTimeoutBudget } from '../../actors/index/sql-timeout-budget.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { TestClock } from '../helpers/clock.ts';

/** Runs one query of `agent` that ends as `timedOut` says; answers the refusal, if any. */
async function query(
  budget: SqlTimeoutBudget,
  agent: string,
  timedOut: boolean,
): Promise<ServiceError | null> {
  try {
    await (
      await budget.admit(agent)
    )(timedOut);
    return null;
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
}

test('an agent is refused 429 after its third timeout of the minute, with the seconds to wait', async () => {
  const clock = new TestClock();
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 100 }, clock);
  for (let i = 0; i < 3; i++) {
    assert.is(await query(budget, 'a', true), null);
    clock.advance(10_000);
  }
  const refused = await query(budget, 'a', false);
  assert.is(refused?.code, 'rate_limited');
  assert.is(refused?.status, 429);
  // The first timeout, 30 s ago, leaves the window in 30 s.
  assert.is(refused?.extra.retry_after_seconds, 30);
  assert.equal(refused?.responseHeaders, { 'retry-after': '30' });
  assert.is(await query(budget, 'b', true), null, 'another agent has its own budget');
  clock.advance(30_000);
  assert.is(await query(budget, 'a', false), null, 'the budget comes back as timeouts age');
});

test('queries that end in time spend nothing', async () => {
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 3 }, new TestClock());
  for (let i = 0; i < 100; i++) assert.is(await query(budget, 'a', false), null);
});

test('running queries hold their places: an agent cannot start more than its budget at once', async () => {
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 100 }, new TestClock());
  const running = [await budget.admit('a'), await budget.admit('a'), await budget.admit('a')];
  const refused = await query(budget, 'a', true);
  assert.is(refused?.code, 'rate_limited');
  assert.is(refused?.extra.retry_after_seconds, 1);
  await running[0]?.(false);
  assert.is(await query(budget, 'a', false), null, 'a place comes back when a query ends');
});

test('many agents together are refused past the total, one timeout each', async () => {
  const clock = new TestClock();
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 5 }, clock);
  for (let i = 0; i < 5; i++) assert.is(await query(budget, `sybil-${i}`, true), null);
  const refused = await query(budget, 'sybil-5', true);
  assert.is(refused?.code, 'rate_limited');
  assert.match(refused?.message ?? '', /all agents together/);
  clock.advance(60_001);
  assert.is(await query(budget, 'sybil-5', false), null);
});

test('settling a query twice counts it once', async () => {
  const budget = new SqlTimeoutBudget({ perAgent: 1, total: 10 }, new TestClock());
  const settle = await budget.admit('a');
  await settle(false);
  await settle(true);
  assert.is(await query(budget, 'a', false), null);
});

test.run();
