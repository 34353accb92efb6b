import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * One agent sending queries that run past their time limit, again and again, as an attacker
 * would: the others' writes and /health are answered meanwhile, and after its third timeout
 * of the minute the agent is refused 429 with Retry-After. (On PGlite each timeout used to stop
 * the database thread and open it again, ~0.7 s that every write and /health waited.)
 */
const test = suite<{ server: TestServer }>('queries past their time limit, in a loop');

/**
 * Long enough for /health to answer several times while one query runs (measured at 500 ms:
 * 18 answers on PGlite, 500 on PostgreSQL; 3 are asked), and short, as the test waits it 7 times.
 */
const TIME_LIMIT_MS = 500;

test.before(async (context) => {
  context.server = await startTestServer({ sqlTimeoutMs: TIME_LIMIT_MS });
});
test.after(async ({ server }) => {
  await server.close();
});

/** CPU work far past any time limit: a count over a cross join of three 2,000-element arrays. */
const RUNAWAY = {
  sql: 'select count(*) from unnest($1::int[]) a, unnest($1::int[]) b, unnest($1::int[]) c',
  params: [`{${Array.from({ length: 2000 }, (_, i) => i).join(',')}}`],
};

type Problem = { code?: string; retry_after_seconds?: number };

const runaway = (server: TestServer, agent: TestAgent) =>
  callJson<Problem>(server, 'POST', '/index/sql', agent.api_token, RUNAWAY);

test('/health answers 200 again and again while a query runs into its time limit', async ({
  server,
}) => {
  const attacker = await server.signUp();
  let answered = false;
  const slow = runaway(server, attacker).finally(() => (answered = true));
  const whileRunning: number[] = [];
  while (!answered) {
    const health = await server.get('/health');
    if (!answered) whileRunning.push(health.status);
  }
  assert.is((await slow).body.code, 'sql_timeout');
  assert.ok(
    whileRunning.length >= 3,
    `only ${whileRunning.length} answers of /health came before the query's own`,
  );
  assert.equal(
    whileRunning.filter((status) => status !== 200),
    [],
    'every /health answered 200',
  );
});

test("an agent's writes succeed while another sends only queries past the limit, which is refused 429 after its third", async ({
  server,
}) => {
  const attacker = await server.signUp();
  const writer = await server.signUp();
  const workspace = await newWorkspace(server, writer);

  const attacks: { status: number; code?: string; retryAfter: string | null }[] = [];
  const attacking = (async () => {
    // Five tries at most: without a budget the loop would never end.
    for (let tries = 1; ; tries++) {
      const answer = await runaway(server, attacker);
      attacks.push({
        status: answer.status,
        code: answer.body.code,
        retryAfter: answer.headers.get('retry-after'),
      });
      if (answer.status !== 408 || tries === 5) return answer;
    }
  })();
  let attackDone = false;
  void attacking.finally(() => (attackDone = true));

  const saved: string[] = [];
  const health: number[] = [];
  while (!attackDone) {
    const path = `note-${saved.length}.md`;
    await saveFile(
      server,
      writer,
      workspace,
      path,
      `---\nstage: draft\n---\nWritten while attacked, ${saved.length}.\n`,
    );
    saved.push(path);
    health.push((await server.get('/health')).status);
  }
  const refused = await attacking;

  assert.equal(
    attacks.map((attack) => attack.code),
    ['sql_timeout', 'sql_timeout', 'sql_timeout', 'rate_limited'],
  );
  assert.is(refused.status, 429);
  assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After says when to come back');
  assert.ok((refused.body.retry_after_seconds ?? 0) > 0, 'and so does the body');
  assert.ok(saved.length >= 3, `${saved.length} writes while the attacker ran`);
  assert.equal(
    health.filter((status) => status !== 200),
    [],
    '/health answered 200 throughout',
  );
  const files = await callJson<{ rows: unknown[][] }>(
    server,
    'POST',
    '/index/sql',
    writer.api_token,
    {
      sql: 'select path from files order by path',
    },
  );
  assert.is(files.status, 200, JSON.stringify(files.body));
  assert.is(files.body.rows.length, saved.length, 'every write is there');
});

test("after its third timeout an agent's quick queries are refused too, before they run; another agent's are not", async ({
  server,
}) => {
  const attacker = await server.signUp();
  for (let i = 0; i < 3; i++) assert.is((await runaway(server, attacker)).status, 408);
  const quick = await callJson<Problem>(server, 'POST', '/index/sql', attacker.api_token, {
    sql: 'select 1',
  });
  assert.is(
    quick.status,
    429,
    'refused before it runs: the service cannot know it would end in time',
  );
  assert.is(quick.body.code, 'rate_limited');
  const other = await server.signUp();
  const theirs = await callJson(server, 'POST', '/index/sql', other.api_token, { sql: 'select 1' });
  assert.is(theirs.status, 200, 'another agent has its own budget');
});

test.run();
