import * as assert from 'uvu/assert';
import { callJson } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';
import type { TestAgent } from '../helpers/workspaces.ts';

/**
 * The per-agent budget of index queries past their time limit, across processes (issue 24,
 * "per-agent limits hold across processes"), on PostgreSQL: two servers on one database, one
 * timeout a minute per agent. A timeout on A is counted where B sees it, so the agent's next
 * query on B is refused 429 before it runs, rather than holding B's connection for its limit.
 */
const test = twoServerSuite('queries past their time limit count on every process', {
  sqlTimeoutMs: 200,
  sqlTimeoutsPerAgent: 1,
});

/** CPU work far past any time limit: a count over a cross join of three 2,000-element arrays. */
const RUNAWAY = {
  sql: 'select count(*) from unnest($1::int[]) a, unnest($1::int[]) b, unnest($1::int[]) c',
  params: [`{${Array.from({ length: 2000 }, (_, i) => i).join(',')}}`],
};

type Problem = { code?: string; retry_after_seconds?: number };

const query = (server: TestServer, agent: TestAgent, body: unknown) =>
  callJson<Problem>(server, 'POST', '/index/sql', agent.api_token, body);

test("a query timing out on A makes the agent's next slow query on B answer 429 before it runs", async ({
  a,
  b,
}) => {
  const attacker = await a.signUp('attacker');
  const timedOut = await query(a, attacker, RUNAWAY);
  assert.is(timedOut.status, 408);
  assert.is(timedOut.body.code, 'sql_timeout');

  // Had it run, it would have answered 408 after its time limit: 429 is its refusal beforehand.
  const refused = await query(b, attacker, RUNAWAY);
  assert.is(refused.status, 429, JSON.stringify(refused.body));
  assert.is(refused.body.code, 'rate_limited');
  const retryAfter = Number(refused.headers.get('retry-after'));
  assert.ok(retryAfter > 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  assert.is(refused.body.retry_after_seconds, retryAfter);
  // A quick query too: the service cannot know it would end in time.
  assert.is((await query(b, attacker, { sql: 'select 1' })).status, 429);
  assert.is((await query(a, attacker, { sql: 'select 1' })).status, 429, 'and on A as well');
});

test("another agent's queries on B are not held to the attacker's budget", async ({ a, b }) => {
  const attacker = await a.signUp('another attacker');
  assert.is((await query(a, attacker, RUNAWAY)).status, 408);
  const bystander = await b.signUp('bystander');
  const answer = await query(b, bystander, { sql: 'select 1 as one' });
  assert.is(answer.status, 200, JSON.stringify(answer.body));
});

test('two slow queries of one agent sent at once to one process: one runs, the other is refused', async ({
  b,
}) => {
  const attacker = await b.signUp('hasty attacker');
  const answers = await Promise.all([query(b, attacker, RUNAWAY), query(b, attacker, RUNAWAY)]);
  // The running query holds the agent's one place while it may still time out.
  assert.equal(answers.map((answer) => answer.status).sort(), [408, 429]);
});

test.run();
