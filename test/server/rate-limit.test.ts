import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RateLimited, RateLimiter } from '../../server/http/rate-limit.ts';

const test = suite('token bucket');

test('a full bucket takes its limit at once, then refills evenly with time', () => {
  let now = 0;
  const limiter = new RateLimiter({ limit: 6, windowSeconds: 60 }, () => now);
  for (let i = 0; i < 6; i++) limiter.take('a');
  assert.throws(
    () => limiter.take('a'),
    (error: unknown) => error instanceof RateLimited,
  );
  now += 10_000; // one request's worth: 6 per 60 s
  limiter.take('a');
  assert.throws(() => limiter.take('a'));
});

test('addresses have buckets of their own', () => {
  const limiter = new RateLimiter({ limit: 1, windowSeconds: 60 }, () => 0);
  limiter.take('a');
  limiter.take('b');
  assert.throws(() => limiter.take('a'));
});

test('a refusal says when to retry', () => {
  const limiter = new RateLimiter({ limit: 2, windowSeconds: 60 }, () => 0);
  limiter.take('a');
  limiter.take('a');
  try {
    limiter.take('a');
    assert.unreachable();
  } catch (error) {
    assert.instance(error, RateLimited);
    assert.is((error as RateLimited).headers['retry-after'], '30');
    assert.is((error as RateLimited).code, 'rate_limited');
  }
});

test('an unlimited limiter sends no headers and never refuses', () => {
  const limiter = new RateLimiter({ limit: Infinity, windowSeconds: 60 });
  for (let i = 0; i < 1000; i++) assert.equal(limiter.take('a'), {});
});

test.run();
