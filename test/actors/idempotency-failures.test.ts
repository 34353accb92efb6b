import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { currentUnit } from '../../actors/kernel/commit.ts';
import { onceByKey } from '../../actors/kernel/idempotency.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A keyed write whose answer is a failure on the service's side (5xx) is not kept for replays:
 * the claim of its key and whatever it wrote roll back, so a retry with the same key runs
 * again. (Committing the claim alone once left the key answering idempotency_key_in_use for
 * its whole lifetime.)
 */
const test = suite<{ server: TestServer }>('a keyed write that failed on our side runs again');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

test('a keyed write answered with a 5xx after it wrote keeps nothing, and its retry with the same key runs and is then replayed', async ({
  server,
}) => {
  const { services } = server;
  const request = { keyHash: `failure-${Date.now()}`, requestHash: 'the same request' };
  let runs = 0;
  const write = (status: number) => () =>
    onceByKey(
      services,
      request,
      async () => {
        runs += 1;
        // A write inside the unit: its transaction opens and claims the key first.
        await (currentUnit() as NonNullable<ReturnType<typeof currentUnit>>).step((tx) =>
          tx.query('select 1'),
        );
        return { answer: `${status} on run ${runs}`, keep: status < 500 };
      },
      (answer) => answer,
      (stored) => stored,
    );

  assert.is(await write(503)(), '503 on run 1');
  const [claims] = await services.driver.query<{ n: number }>(
    'select count(*)::int as n from idempotency_keys where key_hash = $1',
    [request.keyHash],
  );
  assert.is(claims?.n, 0, 'the failed write left no claim of its key');

  const retried = await write(201)().catch((error: unknown) =>
    error instanceof ServiceError ? error.code : String(error),
  );
  assert.is(retried, '201 on run 2', 'the retry ran again');
  assert.is(await write(201)(), '201 on run 2', 'and is replayed from then on');
  assert.is(runs, 2);
});

test.run();
