import type postgres from 'postgres';
import * as assert from 'uvu/assert';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import {
  adminConnection,
  backendState,
  waitingServiceBackends,
} from '../helpers/postgres-backends.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { eventually } from '../helpers/turns.ts';
import { TcpProxy } from '../storage/tcp-proxy.ts';

/**
 * Issue 32 §5: a write whose database connection is lost around COMMIT is answered with the
 * truth. The COMMIT is held at the server by a deferred trigger that waits on an advisory lock
 * the test holds (deterministic: the test waits for the backend to block, no sleeps); then the
 * connection is lost in one of three ways:
 * - the COMMIT completes at the server but its reply never reaches the service (a relay in
 *   front of PostgreSQL withholds it, then drops the connection): the answer is the success;
 * - the backend is killed while COMMIT waits (pg_terminate_backend): nothing is stored, and
 *   503 `storage_unavailable` ("nothing was written") is true;
 * - the reply is lost and the database stays out of reach: 503 `outcome_unknown`, and a retry
 *   with the same Idempotency-Key replays the stored answer.
 * Never a false "nothing was written".
 *
 * Flaky once (2 of 10 runs on a loaded machine): a connection closed with a write scheduled
 * never sent its next StartupMessage (postgres.js 3.4.9; patched), so a case's first statement
 * waited 10 s for CONNECT_TIMEOUT (503 before its COMMIT was held), or the outcome lookup
 * waited out its own 10 s on that connection (outcome_unknown for a COMMIT that completed).
 */
interface Context {
  url: string;
  admin: postgres.Sql;
  relay: TcpProxy;
  server: TestServer;
  token: string;
  workspaceId: string;
}

const LOCK = 4242;

/** One write operation, with a valid request and where its writes land. */
interface WriteCase {
  operation: string;
  /** A table the write inserts into: its COMMIT is held by a trigger there. */
  table: string;
  request: (context: Context, key: string) => Promise<Response>;
}

let counter = 0;
const WRITES: WriteCase[] = [
  {
    operation: 'sign_up',
    table: 'agents',
    request: ({ server }) => server.post('/agents', { name: `faults ${process.pid}-${++counter}` }),
  },
  {
    operation: 'leave_feedback',
    table: 'feedback',
    request: ({ server, token }, key) =>
      fetch(server.url('/feedback'), {
        method: 'POST',
        headers: keyed(token, key),
        body: JSON.stringify({ message: `faults ${++counter}`, category: 'other' }),
      }),
  },
  {
    operation: 'create_workspace',
    table: 'workspaces',
    request: ({ server, token }, key) =>
      fetch(server.url('/workspaces'), {
        method: 'POST',
        headers: keyed(token, key),
        body: '{}',
      }),
  },
  {
    operation: 'write_file',
    table: 'file_versions',
    request: ({ server, token, workspaceId }, key) =>
      fetch(server.url(`/workspaces/${workspaceId}/files/f${++counter}.txt`), {
        method: 'PUT',
        headers: { ...keyed(token, key), 'content-type': 'text/plain' },
        body: `bytes ${counter}`,
      }),
  },
];

function keyed(token: string, key: string): Record<string, string> {
  return {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    'idempotency-key': key,
  };
}

const test = postgresSuite<Context>('writes whose connection is lost around COMMIT');

test.before(async (context) => {
  context.url = await freshDatabaseUrl();
  const target = new URL(context.url);
  context.relay = await TcpProxy.start(target.hostname, Number(target.port));
  context.admin = adminConnection(context.url, 'faults-commit-outcome');
  await context.admin.unsafe(`
    create function faults_hold_commit() returns trigger language plpgsql as $$
    begin
      perform pg_advisory_lock_shared(${LOCK});
      perform pg_advisory_unlock_shared(${LOCK});
      return null;
    end $$`);
  context.server = await startTestServer({ databaseUrl: context.relay.rewrite(context.url) });
  const agent = await context.server.signUp();
  context.token = agent.api_token;
  const workspace = await fetch(context.server.url('/workspaces'), {
    method: 'POST',
    headers: keyed(agent.api_token, 'setup'),
    body: '{}',
  });
  context.workspaceId = ((await workspace.json()) as { workspace_id: string }).workspace_id;
});
test.after(async ({ admin, relay, server }) => {
  await relay.up().catch(() => undefined);
  await server.close();
  await relay.down();
  await admin.end({ timeout: 5 });
});

async function rows(admin: postgres.Sql, table: string): Promise<number> {
  const [row] = await admin.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table}`);
  return row?.n ?? 0;
}

/**
 * Runs `write` with its COMMIT held at the server (the trigger waits for the test's lock), and
 * has `lose` lose the connection, given the held backend's pid and the lock's release (done
 * after `lose` if it did not); returns the answer.
 */
async function atCommit(
  context: Context,
  write: WriteCase,
  key: string,
  lose: (pid: number, release: () => Promise<void>) => Promise<void>,
): Promise<Response> {
  const { admin } = context;
  // The previous case lost connections on purpose: each case starts once the service has its
  // database again (a read that succeeds), so its write meets the fault it is given, no other.
  await eventually('the service answers a read', async () => {
    const response = await fetch(context.server.url('/whoami'), {
      headers: { authorization: `Bearer ${context.token}` },
    });
    await response.body?.cancel();
    return response.ok ? true : null;
  });
  await admin.unsafe(`
    create constraint trigger faults_hold after insert on ${write.table}
    deferrable initially deferred for each row execute function faults_hold_commit()`);
  await admin.unsafe(`select pg_advisory_lock(${LOCK})`);
  let locked = true;
  const release = async () => {
    if (locked) await admin.unsafe(`select pg_advisory_unlock(${LOCK})`);
    locked = false;
  };
  try {
    const answer = write.request(context, key);
    let early: Response | null = null;
    void answer.then((response) => (early = response));
    const pid = await eventually('the COMMIT waits at the trigger', async () => {
      if (early) throw new Error(`answered first: ${early.status} ${await early.text()}`);
      const waiting = await waitingServiceBackends(admin, 'advisory');
      return waiting.find((backend) => backend.query === 'commit')?.pid ?? null;
    });
    await lose(pid, release);
    await release();
    return await answer;
  } finally {
    await release();
    await admin.unsafe(`drop trigger faults_hold on ${write.table}`);
  }
}

/** Lets the held COMMIT complete at the server while its reply is withheld, then drops it. */
function replyLost(context: Context, then: () => Promise<void> | void) {
  return async (pid: number, release: () => Promise<void>) => {
    context.relay.hold();
    await release();
    await eventually(
      'the COMMIT completes at the server',
      async () => (await backendState(context.admin, pid)) === 'idle',
    );
    await then();
  };
}

test('every write operation in the table is one the operation table declares as a write', () => {
  for (const write of WRITES) {
    const operation = OPERATION_LIST.find((candidate) => candidate.name === write.operation);
    assert.ok(operation, `${write.operation} is an operation`);
    assert.is.not(operation.readOnly, true, `${write.operation} writes`);
  }
});

for (const write of WRITES) {
  test(`${write.operation}: a COMMIT that completed while its reply was lost answers its success, and it is stored`, async (context) => {
    const before = await rows(context.admin, write.table);
    const answer = await atCommit(
      context,
      write,
      `committed-${write.operation}`,
      replyLost(context, () => context.relay.cut()),
    );
    assert.ok(answer.ok, `${answer.status} ${await answer.clone().text()}`);
    await answer.body?.cancel();
    assert.is(await rows(context.admin, write.table), before + 1, 'stored once');
  });

  test(`${write.operation}: a backend killed during COMMIT answers 503 storage_unavailable, and nothing is stored`, async (context) => {
    const before = await rows(context.admin, write.table);
    const answer = await atCommit(context, write, `killed-${write.operation}`, async (pid) => {
      await context.admin`select pg_terminate_backend(${pid})`;
    });
    assert.is(answer.status, 503);
    assert.is(((await answer.json()) as { code: string }).code, 'storage_unavailable');
    assert.is(await rows(context.admin, write.table), before, 'nothing was written: true');
  });
}

test('a lost COMMIT reply with the database out of reach answers 503 outcome_unknown; the same Idempotency-Key then replays the stored answer', async (context) => {
  const write = WRITES.find((candidate) => candidate.operation === 'create_workspace');
  assert.ok(write);
  const before = await rows(context.admin, write.table);
  const answer = await atCommit(
    context,
    write,
    'unknown-outcome',
    replyLost(context, () => context.relay.down()),
  );
  assert.is(answer.status, 503);
  assert.ok(Number(answer.headers.get('retry-after')) > 0, 'Retry-After says when');
  const problem = (await answer.json()) as { code: string; detail: string };
  assert.is(problem.code, 'outcome_unknown');
  assert.match(problem.detail, /same Idempotency-Key/);
  assert.is(await rows(context.admin, write.table), before + 1, 'it was in fact stored');

  await context.relay.up();
  const retry = await eventually('the service reaches its database again', async () => {
    const response = await write.request(context, 'unknown-outcome');
    if (response.status === 503) {
      await response.body?.cancel();
      return null;
    }
    return response;
  });
  assert.is(retry.status, 201);
  assert.is(retry.headers.get('idempotent-replayed'), 'true', 'the stored answer, replayed');
  await retry.body?.cancel();
  assert.is(await rows(context.admin, write.table), before + 1, 'stored once, not twice');
});

test.run();
