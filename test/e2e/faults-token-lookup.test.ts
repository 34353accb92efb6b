import type postgres from 'postgres';
import * as assert from 'uvu/assert';
import {
  adminConnection,
  terminateServiceBackends as killService,
  waitingServiceBackends,
} from '../helpers/postgres-backends.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Issue 32 §5: in one run of a kill loop (the service's backends killed in a loop while
 * sign-ups and reads ran), a whoami with the token of an earlier successful sign-up answered
 * 401. A token the service gave is refused only for what the database says of it; a database
 * that fails the look-up is 503, never "that token is not known". Here the service's token
 * look-ups (and the agent loads behind them) meet killed backends, on purpose: the cache of
 * tokens and agents is emptied as a lost LISTEN connection empties it, so each whoami asks the
 * database. Every answer must be 200 or 503; every sign-up answered 201 must be stored.
 */
interface Context {
  admin: postgres.Sql;
  server: TestServer;
  tokens: string[];
}

const AGENTS = 24;
let names = 0;

const test = postgresSuite<Context>('token look-ups that meet killed database backends');

test.before(async (context) => {
  const url = await freshDatabaseUrl();
  context.admin = adminConnection(url, 'faults-token-lookup');
  context.server = await startTestServer({ databaseUrl: url });
  context.tokens = [];
  for (let i = 0; i < AGENTS; i++) context.tokens.push((await context.server.signUp()).api_token);
});
test.after(async ({ admin, server }) => {
  await server.close();
  await admin.end({ timeout: 5 });
});

/** Empties what the service keeps of tokens and agents, as a lost LISTEN connection does. */
function forget(server: TestServer): void {
  server.services.tokens.forgetAll();
  server.services.agents.invalidateAll();
}

async function whoami(
  server: TestServer,
  token: string,
): Promise<{ status: number; code?: string }> {
  const response = await server.get('/whoami', token);
  const body = (await response.json().catch(() => ({}))) as { code?: string };
  return { status: response.status, code: body.code };
}

function neverUnauthorized(answers: { status: number; code?: string }[]): void {
  for (const answer of answers) {
    assert.ok(
      answer.status === 200 || (answer.status === 503 && answer.code === 'storage_unavailable'),
      `a known token answered ${answer.status} ${answer.code ?? ''}`,
    );
  }
}

test('tokens looked up right after every pooled backend was killed answer 200 or 503, never 401', async ({
  admin,
  server,
  tokens,
}) => {
  // Connections in the pool, all in use at once, then all dead.
  forget(server);
  neverUnauthorized(await Promise.all(tokens.map((token) => whoami(server, token))));
  assert.ok((await killService(admin)) > 0);
  forget(server);
  neverUnauthorized(await Promise.all(tokens.map((token) => whoami(server, token))));
});

test('a token look-up whose backend the operator kills while it waits answers 503 or 200, never 401', async ({
  admin,
  server,
  tokens,
}) => {
  forget(server);
  const token = tokens[0] as string;
  const locked = admin.begin(async (tx) => {
    await tx`lock table agent_tokens in access exclusive mode`;
    const answer = whoami(server, token);
    // The look-up waits on the lock; its backend is then killed, and the lock let go.
    for (;;) {
      const [waiting] = await waitingServiceBackends(tx);
      if (waiting) {
        await tx`select pg_terminate_backend(${waiting.pid})`;
        break;
      }
    }
    // Not awaited here: a look-up asked again would wait for this lock, held until we return.
    return { answer };
  });
  neverUnauthorized([await (await locked).answer]);
});

/** Kills the service's backends as soon as some run a statement: statements cut mid-way. */
async function killWhileBusy(admin: postgres.Sql, done: () => boolean): Promise<number> {
  while (!done()) {
    const [busy] = await admin<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and application_name = 'agent-service'
        and state <> 'idle'`;
    if ((busy?.n ?? 0) > 0) return killService(admin);
  }
  return 0;
}

test('while backends are killed under sign-ups and look-ups, known tokens never answer 401, and every 201 is stored', async ({
  admin,
  server,
  tokens,
}) => {
  const answers: { status: number; code?: string }[] = [];
  const signedUp: string[] = [];
  let killed = 0;
  for (let round = 0; round < 12; round++) {
    forget(server);
    let done = false;
    const work = Promise.all([
      Promise.all(tokens.map((token) => whoami(server, token))),
      Promise.all(
        Array.from({ length: 6 }, async () => {
          const response = await server.post('/agents', { name: `kill ${round} ${++names}` });
          const body = (await response.json().catch(() => ({}))) as {
            api_token?: string;
            code?: string;
          };
          if (response.status === 201 && body.api_token) signedUp.push(body.api_token);
          return { status: response.status, code: body.code };
        }),
      ),
    ]).finally(() => (done = true));
    killed += await killWhileBusy(admin, () => done);
    const [reads, signUps] = await work;
    answers.push(...reads);
    for (const answer of signUps) {
      assert.ok(
        answer.status === 201 || answer.status === 503,
        `a sign-up answered ${answer.status} ${answer.code ?? ''}`,
      );
    }
  }
  assert.ok(killed > 0, 'backends were killed');
  neverUnauthorized(answers);
  assert.ok(signedUp.length > 0, 'some sign-ups went through');
  // Once the kills stop, every token a sign-up gave works: the 201 was stored.
  forget(server);
  const after = await Promise.all([...tokens, ...signedUp].map((token) => whoami(server, token)));
  assert.equal(
    after.filter((answer) => answer.status !== 200),
    [],
  );
});

test.run();
