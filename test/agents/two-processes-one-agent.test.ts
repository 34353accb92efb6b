import postgres from 'postgres';
import { io as connect, type Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Two real server processes on one PostgreSQL drive the same agent at once: feedback written
 * on both, its feed read on both (plain reads and long-polls, all from the one remembered
 * place), and a socket on each. Each process holds its own copy of the agent actor; only the
 * version column and the notices between processes keep them honest.
 */
const test = postgresSuite<{ a: ServiceProcess; b: ServiceProcess; databaseUrl: string }>(
  'two processes drive one agent at once',
);

interface Event {
  event_id: string;
  cursor: string;
  type: string;
  data: Record<string, unknown>;
}

test.before(async (context) => {
  context.databaseUrl = await freshDatabaseUrl();
  const env = { DATABASE_URL: context.databaseUrl };
  [context.a, context.b] = await Promise.all([startServiceProcess(env), startServiceProcess(env)]);
});
test.after(async ({ a, b }) => {
  await Promise.all([a?.stop(), b?.stop()]);
});

async function call(base: string, path: string, token: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  });
  const body = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** A socket that collects every `change` until `count` have come. */
function collect(base: string, token: string, count: number) {
  const events: Event[] = [];
  const socket: Socket = connect(base, {
    auth: { token, cursor: 'c0' },
    transports: ['websocket'],
    reconnection: false,
  });
  const done = new Promise<Event[]>((resolve) => {
    socket.on('change', (event: Event) => {
      events.push(event);
      if (events.length === count) resolve(events);
    });
  });
  return { socket, done };
}

test('every change reaches each reader once, the place never moves back, and no write is lost', async ({
  a,
  b,
  databaseUrl,
}) => {
  const signUp = await fetch(`${a.baseUrl}/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'shared agent' }),
  });
  const agent = (await signUp.json()) as { agent_id: string; api_token: string };
  const token = agent.api_token;
  const writes = 40;
  const total = writes + 1; // and the welcome
  const sockets = [collect(a.baseUrl, token, total), collect(b.baseUrl, token, total)];
  try {
    // Readers on both processes take turns at the one remembered place until all is read.
    const read: Event[] = [];
    const cursors: number[][] = [[], [], [], []];
    const reader = async (index: number) => {
      const base = index % 2 === 0 ? a.baseUrl : b.baseUrl;
      let turn = 0;
      while (read.length < total) {
        const path = turn++ % 2 === 0 ? '/changes?limit=7' : '/changes/wait?timeout=1&limit=7';
        const page = (await call(base, path, token)) as { changes: Event[]; cursor: string };
        read.push(...page.changes);
        cursors[index]?.push(parseInt(page.cursor.slice(1), 36));
      }
    };
    const writer = async (index: number) => {
      for (let i = index; i < writes; i += 4) {
        const base = i % 2 === 0 ? a.baseUrl : b.baseUrl;
        await call(base, '/feedback', token, {
          method: 'POST',
          body: JSON.stringify({ message: `note ${i}`, category: 'other' }),
        });
      }
    };
    await Promise.all([0, 1, 2, 3].map(writer).concat([0, 1, 2, 3].map(reader)));

    for (const seen of cursors) {
      const sorted = [...seen].sort((x, y) => x - y);
      assert.equal(seen, sorted, 'each reader saw the remembered place only move forward');
    }
    const ids = read.map((event) => event.event_id);
    assert.is(new Set(ids).size, ids.length, 'no change was read twice from the remembered place');
    assert.is(ids.length, total, 'every change was read');
    assert.is(read.filter((event) => event.type === 'feedback.received').length, writes);
    assert.is(read.filter((event) => event.type === 'agent.welcome').length, 1);

    for (const { done } of sockets) {
      const events = await done;
      const seqs = events.map((event) => parseInt(event.cursor.slice(1), 36));
      assert.equal(
        seqs,
        Array.from({ length: total }, (_, i) => i + 1),
        'each socket got every change once, in order',
      );
    }

    // The row: the place is at the head, and every move of it was a new version, none lost.
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
    try {
      const [row] = await sql`
        select a.version, a.machine, h.last_seq from agents a join feed_heads h using (agent_id)
        where a.agent_id = ${agent.agent_id}`;
      const machine = row?.machine as { context: { readSeq: number } };
      assert.is(machine.context.readSeq, total, 'the remembered place ended at the head');
      assert.is(Number(row?.last_seq), total);
      const who = (await call(b.baseUrl, '/whoami', token)) as { unread: { changes: number } };
      assert.is(who.unread.changes, 0);
    } finally {
      await sql.end();
    }
  } finally {
    for (const { socket } of sockets) socket.disconnect();
  }
});

test.run();
