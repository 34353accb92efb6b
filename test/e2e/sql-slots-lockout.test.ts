import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sqlSlotsOf } from '../../actors/index/handlers.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Issue 32: ten agents with three slow queries each (none past its time limit) held all thirty
 * running places of the SQL budget, and every other agent's `select 1` answered 429. Now each
 * agent holds at most two queries running or waiting, the third refused `429 too_many_queries`,
 * and an agent with nothing running is served as soon as a slot frees, ahead of theirs.
 */
const test = suite<{ server: TestServer }>('SQL slots under ten greedy agents');

test.before(async (context) => {
  // A limit far past the slow queries: they hold their slots, never time out.
  context.server = await startTestServer({ sqlTimeoutMs: 30_000 });
});
test.after(async ({ server }) => {
  await server.close();
});

/** A count over a cross join of two 400-element arrays: slow, far within the limit. */
const SLOW = {
  sql: 'select count(*) from unnest($1::int[]) a, unnest($1::int[]) b',
  params: [`{${Array.from({ length: 400 }, (_, i) => i).join(',')}}`],
};

type Answer = { status: number; code?: string; retryAfter: string | null };

const query = async (server: TestServer, token: string, body: unknown): Promise<Answer> => {
  const answer = await callJson<{ code?: string }>(server, 'POST', '/index/sql', token, body);
  return {
    status: answer.status,
    code: answer.body.code,
    retryAfter: answer.headers.get('retry-after'),
  };
};

test("an innocent agent's select 1 is served ahead of ten greedy agents' queries, and each greedy agent's third is refused 429 too_many_queries", async ({
  server,
}) => {
  const slots = sqlSlotsOf(server.services);
  const greedy = await Promise.all(Array.from({ length: 10 }, () => server.signUp()));
  const innocent = await server.signUp();
  const answeredBefore: string[] = [];
  let innocentAnswered = false;
  const sent = greedy.flatMap((agent) =>
    [0, 1, 2].map(() =>
      query(server, agent.api_token, SLOW).then((answer) => {
        if (answer.status === 200 && !innocentAnswered) answeredBefore.push(agent.agent_id);
        return answer;
      }),
    ),
  );
  // Each greedy agent's third is refused at once: then its other two are in flight.
  const refusals: Answer[] = [];
  await Promise.race([
    new Promise<void>((resolve) => {
      for (const answer of sent)
        void answer.then((settled) => {
          if (settled.status === 429) refusals.push(settled);
          if (refusals.length === greedy.length) resolve();
        });
    }),
    Promise.all(sent),
  ]);
  assert.is(refusals.length, greedy.length, 'one refusal per greedy agent');
  for (const refusal of refusals) {
    assert.is(refusal.code, 'too_many_queries');
    assert.is(refusal.retryAfter, '1');
  }
  const held = slots.counts();
  assert.ok(held.running + held.waiting <= 20, JSON.stringify(held));

  const answer = await query(server, innocent.api_token, { sql: 'select 1 as one' });
  innocentAnswered = true;
  assert.is(answer.status, 200, JSON.stringify(answer));
  // Served once the queries running when it came ended (one slot on PGlite, four on
  // PostgreSQL): never behind the greedy agents' waiting ones.
  const { running } = slotsLimits(server);
  assert.ok(
    answeredBefore.length <= 2 * running,
    `${answeredBefore.length} greedy queries were answered before the innocent one`,
  );
  const all = await Promise.all(sent);
  assert.is(all.filter((settled) => settled.status === 200).length, 20, 'the greedy two each ran');
  assert.equal(slots.counts(), { running: 0, waiting: 0 });
});

const slotsLimits = (server: TestServer) => sqlSlotsOf(server.services).limits;

test.run();
