import postgres from 'postgres';
import { io as connect, type Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import {
  connectionsByProcess,
  isListenConnection,
  type ConnectionsByProcess,
} from '../helpers/postgres-connections.ts';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Two real service processes on one PostgreSQL: each holds one LISTEN connection, however many
 * sockets, long-polls and agents it serves, and a change committed on one reaches the other's
 * sockets and long-polls through it. Which process owns a backend is read from the kernel (the
 * process's sockets against pg_stat_activity's client_port), not from anything it reports.
 * Needs DATABASE_URL: without it the suite is counted as skipped (test/run.ts says so).
 */
const test = postgresSuite<{
  a: ServiceProcess;
  b: ServiceProcess;
  databaseUrl: string;
  admin: postgres.Sql;
}>('two processes hold one LISTEN connection each, whatever they serve');

interface Change {
  type: string;
  cursor: string;
  data: Record<string, unknown>;
}

interface Agent {
  agent_id: string;
  api_token: string;
}

const AGENTS = 10;
const SOCKETS_PER_AGENT = 5;
const LONG_POLLS = 5;

test.before(async (context) => {
  context.databaseUrl = await freshDatabaseUrl();
  context.admin = postgres(context.databaseUrl, { max: 1, onnotice: () => undefined });
  const env = { DATABASE_URL: context.databaseUrl };
  [context.a, context.b] = await Promise.all([startServiceProcess(env), startServiceProcess(env)]);
});
test.after(async ({ a, b, admin }) => {
  await Promise.all([a?.stop(), b?.stop(), admin?.end({ timeout: 5 })]);
});

async function call<T>(base: string, method: string, path: string, token?: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

const signUp = (base: string, name: string) =>
  call<Agent>(base, 'POST', '/agents', undefined, { name });

/**
 * A socket that keeps every `change`, replayed from the start of the feed (the remembered place
 * may be past the welcome); resolves once the welcome has come.
 */
async function openSocket(base: string, token: string) {
  const changes: Change[] = [];
  const waiters: { type: string; resolve: () => void }[] = [];
  const socket: Socket = connect(base, {
    auth: { token, cursor: 'c0' },
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
  });
  socket.on('change', (change: Change) => {
    changes.push(change);
    for (const waiter of waiters.filter((w) => w.type === change.type)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  const arrival = (type: string) =>
    changes.some((change) => change.type === type)
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ type, resolve }));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect_error', reject);
    void arrival('agent.welcome').then(resolve);
  });
  return { socket, changes, arrival };
}

/** The LISTEN connections of each process, by name; fails on one that no process holds. */
function listenCounts(seen: ConnectionsByProcess, names: Record<string, number>) {
  const counts: Record<string, number> = {};
  for (const [name, pid] of Object.entries(names)) {
    counts[name] = (seen.byProcess.get(pid) ?? []).filter(isListenConnection).length;
  }
  const stray = seen.unclaimed.filter(isListenConnection);
  assert.is(stray.length, 0, `LISTEN connections of no service process: ${JSON.stringify(stray)}`);
  return counts;
}

async function listenersNow({
  a,
  b,
  admin,
  databaseUrl,
}: Parameters<Parameters<typeof test>[1]>[0]) {
  const seen = await connectionsByProcess(admin, databaseUrl, [a.pid, b.pid]);
  for (const connections of seen.byProcess.values()) {
    for (const connection of connections.filter(isListenConnection)) {
      assert.is(connection.applicationName, 'agent-service');
    }
  }
  return listenCounts(seen, { a: a.pid, b: b.pid });
}

test('with one socket on B, each process holds exactly one LISTEN connection', async (context) => {
  const { a, b } = context;
  const agent = await signUp(a.baseUrl, 'one socket');
  const open = await openSocket(b.baseUrl, agent.api_token);
  try {
    // A write on A: B's listener has surely said LISTEN by the time this reaches the socket.
    await call(a.baseUrl, 'POST', '/feedback', agent.api_token, {
      message: 'one socket',
      category: 'other',
    });
    await open.arrival('feedback.received');
    assert.equal(await listenersNow(context), { a: 1, b: 1 });
  } finally {
    open.socket.close();
  }
});

test('50 sockets of 10 agents and 5 parked long-polls on B still make one LISTEN connection per process, and a message and a file save committed on A reach every one of them once', async (context) => {
  const { a, b } = context;
  const owner = await signUp(a.baseUrl, 'owner on A');
  const { workspace_id: workspace } = await call<{ workspace_id: string }>(
    a.baseUrl,
    'POST',
    '/workspaces',
    owner.api_token,
    { name: 'listeners' },
  );
  const members: Agent[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const member = await signUp(b.baseUrl, `member ${i} on B`);
    const { invite_token: invite } = await call<{ invite_token: string }>(
      a.baseUrl,
      'POST',
      `/workspaces/${workspace}/invites`,
      owner.api_token,
      {},
    );
    await call(b.baseUrl, 'POST', '/invites/redeem', member.api_token, { invite_token: invite });
    members.push(member);
  }
  // Each long-poll waits from its agent's head, so only a new change answers it.
  const aborts = new AbortController();
  let written = false;
  let answeredEarly = false;
  // Each answer is wrapped: awaiting the set-up must not wait for the answers themselves.
  const parked = await Promise.all(
    members.slice(0, LONG_POLLS).map(async (member) => {
      const { cursor } = await call<{ cursor: string }>(
        b.baseUrl,
        'GET',
        '/changes?limit=500',
        member.api_token,
      );
      const answer = fetch(`${b.baseUrl}/changes/wait?after=${cursor}&timeout=60`, {
        headers: { authorization: `Bearer ${member.api_token}` },
        signal: aborts.signal,
      }).then(async (response) => {
        answeredEarly ||= !written;
        return (await response.json()) as { changes: Change[] };
      });
      answer.catch(() => undefined);
      return { answer };
    }),
  );
  const sockets: Awaited<ReturnType<typeof openSocket>>[] = [];
  try {
    for (const member of members) {
      for (let i = 0; i < SOCKETS_PER_AGENT; i++) {
        sockets.push(await openSocket(b.baseUrl, member.api_token));
      }
    }
    assert.is(sockets.length, AGENTS * SOCKETS_PER_AGENT);
    assert.equal(await listenersNow(context), { a: 1, b: 1 });

    written = true;
    assert.not.ok(answeredEarly, 'a long-poll answered before any change was written');
    const message = await call<{ message_id: string }>(
      a.baseUrl,
      'POST',
      `/workspaces/${workspace}/messages`,
      owner.api_token,
      { text: 'from A' },
    );
    const answers = await Promise.all(parked.map((poll) => poll.answer));
    for (const answer of answers) {
      assert.equal(
        answer.changes.map((change) => [change.type, change.data.message_id]),
        [['message.sent', message.message_id]],
      );
    }
    await Promise.all(sockets.map((socket) => socket.arrival('message.sent')));

    await call(
      a.baseUrl,
      'PUT',
      `/workspaces/${workspace}/files/notes/listeners.txt`,
      owner.api_token,
      'saved on A',
    );
    await Promise.all(sockets.map((socket) => socket.arrival('file.saved')));
    for (const socket of sockets) {
      const told = socket.changes.filter((change) => change.type !== 'agent.welcome');
      const seen = told.map((change) =>
        change.type === 'message.sent'
          ? [change.type, change.data.message_id]
          : [change.type, change.data.path],
      );
      const cursors = told.map((change) => change.cursor);
      assert.is(new Set(cursors).size, cursors.length, 'no change came twice');
      assert.ok(
        seen.some(([type, id]) => type === 'message.sent' && id === message.message_id),
        'the message came',
      );
      assert.ok(
        seen.some(([type, path]) => type === 'file.saved' && path === 'notes/listeners.txt'),
        'the file save came',
      );
    }
    assert.equal(await listenersNow(context), { a: 1, b: 1 });
  } finally {
    aborts.abort();
    for (const socket of sockets) socket.socket.close();
  }
});

test('after the sockets close, each process still holds exactly one LISTEN connection, and it still carries changes', async (context) => {
  const { a, b } = context;
  assert.equal(await listenersNow(context), { a: 1, b: 1 });
  const agent = await signUp(a.baseUrl, 'after the crowd');
  const open = await openSocket(b.baseUrl, agent.api_token);
  try {
    await call(a.baseUrl, 'POST', '/feedback', agent.api_token, {
      message: 'after the crowd',
      category: 'other',
    });
    await open.arrival('feedback.received');
  } finally {
    open.socket.close();
  }
  assert.equal(await listenersNow(context), { a: 1, b: 1 });
});

test.run();
