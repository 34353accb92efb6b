import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SqlTimeoutBudget } from '../../actors/index/sql-timeout-budget.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { TestClock } from '../helpers/clock.ts';

/** Runs one query of `agent` that ends as `timedOut` says; answers the refusal, if any. */
function query(budget: SqlTimeoutBudget, agent: string, timedOut: boolean): ServiceError | null {
  try {
    budget.admit(agent)(timedOut);
    return null;
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
}

test('an agent is refused 429 after its third timeout of the minute, with the seconds to wait', () => {
  const clock = new TestClock();
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 100 }, clock);
  for (let i = 0; i < 3; i++) {
    assert.is(query(budget, 'a', true), null);
    clock.advance(10_000);
  }
  const refused = query(budget, 'a', false);
  assert.is(refused?.code, 'rate_limited');
  assert.is(refused?.status, 429);
  // The first timeout, 30 s ago, leaves the window in 30 s.
  assert.is(refused?.extra.retry_after_seconds, 30);
  assert.equal(refused?.responseHeaders, { 'retry-after': '30' });
  assert.is(query(budget, 'b', true), null, 'another agent has its own budget');
  clock.advance(30_000);
  assert.is(query(budget, 'a', false), null, 'the budget comes back as timeouts age');
});

test('queries that end in time spend nothing', () => {
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 3 }, new TestClock());
  for (let i = 0; i < 100; i++) assert.is(query(budget, 'a', false), null);
});

test('running queries hold their places: an agent cannot start more than its budget at once', () => {
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 100 }, new TestClock());
  const running = [budget.admit('a'), budget.admit('a'), budget.admit('a')];
  const refused = query(budget, 'a', true);
  assert.is(refused?.code, 'rate_limited');
  assert.is(refused?.extra.retry_after_seconds, 1);
  running[0]?.(false);
  assert.is(query(budget, 'a', false), null, 'a place comes back when a query ends');
});

test('many agents together are refused past the total, one timeout each', () => {
  const clock = new TestClock();
  const budget = new SqlTimeoutBudget({ perAgent: 3, total: 5 }, clock);
  for (let i = 0; i < 5; i++) assert.is(query(budget, `sybil-${i}`, true), null);
  const refused = query(budget, 'sybil-5', true);
  assert.is(refused?.code, 'rate_limited');
  assert.match(refused?.message ?? '', /all agents together/);
  clock.advance(60_001);
  assert.is(query(budget, 'sybil-5', false), null);
});

test('settling a query twice counts it once', () => {
  const budget = new SqlTimeoutBudget({ perAgent: 1, total: 10 }, new TestClock());
  const settle = budget.admit('a');
  settle(false);
  settle(true);
  assert.is(query(budget, 'a', false), null);
});

test.run();
