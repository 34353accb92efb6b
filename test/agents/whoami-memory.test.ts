import * as assert from 'uvu/assert';
import { answerKnock, caughtUp, knockAgent, read, send } from '../helpers/chat.ts';
import { changesUntil } from '../helpers/changes.ts';
import { connectSocket } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';
import { joinWorkspace, newWorkspace, saveFile } from '../helpers/workspaces.ts';
import { TcpProxy } from '../storage/tcp-proxy.ts';

/**
 * `whoami` answers from memory on the warm path (services.counts): its figures are computed
 * once from kept counts, then held until a commit changes them. These tests hold it to the
 * two halves of that promise: no database on the warm path, and never a stale figure after a
 * write the caller has seen answered (or, from another process, seen pushed).
 */

interface Me {
  unread: { changes: number; messages: number; knocks: number };
  storage: { used_bytes: number; current_files_bytes: number };
  knock_settings: { direct_knocks: string };
}

async function whoami(server: TestServer, token: string): Promise<Me> {
  const me = await callJson<Me>(server, 'GET', '/whoami', token);
  assert.is(me.status, 200, JSON.stringify(me.body));
  return me.body;
}

const paused = postgresSuite<{ proxy: TcpProxy; server: TestServer }>(
  'whoami while the database is paused',
);

paused.before(async (context) => {
  const url = await freshDatabaseUrl();
  const target = new URL(url);
  context.proxy = await TcpProxy.start(target.hostname, Number(target.port));
  context.server = await startTestServer({ databaseUrl: context.proxy.rewrite(url) });
});
paused.after(async ({ proxy, server }) => {
  await proxy.up().catch(() => undefined);
  await server.close();
  await proxy.down();
});

paused(
  'whoami with the database paused still answers from a loaded actor, with the same figures',
  async ({ proxy, server }) => {
    const agent = await server.signUp();
    const workspaceId = await newWorkspace(server, agent);
    await saveFile(server, agent, workspaceId, 'a.txt', 'twelve bytes');
    const warm = await whoami(server, agent.api_token);
    assert.is(warm.storage.current_files_bytes, 12);

    await proxy.down();
    try {
      for (let i = 0; i < 3; i++) assert.equal(await whoami(server, agent.api_token), warm);
      const refused = await server.post(
        '/feedback',
        { message: 'down', category: 'other' },
        agent.api_token,
      );
      assert.is(refused.status, 503, 'a write still needs the database: the pause is real');
    } finally {
      await proxy.up();
    }
  },
);

paused.run();

const test = serverSuite('whoami figures kept in memory');

test('every figure is right in the answer to the first whoami after each write that changes it', async ({
  server,
}) => {
  const owner = await server.signUp();
  const guest = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, guest, workspaceId);
  await whoami(server, guest.api_token);

  await send(server, owner, workspaceId, 'one');
  assert.is((await whoami(server, guest.api_token)).unread.messages, 1, 'a message sent');
  await send(server, owner, workspaceId, 'two');
  assert.is((await whoami(server, guest.api_token)).unread.messages, 2, 'another');
  assert.is((await read(server, guest, workspaceId)).status, 200);
  assert.is((await whoami(server, guest.api_token)).unread.messages, 0, 'read');

  await send(server, owner, workspaceId, 'three');
  assert.is((await whoami(server, guest.api_token)).unread.messages, 1);
  const left = await server.post(`/workspaces/${workspaceId}/leave`, {}, guest.api_token);
  assert.is(left.status, 200, await left.clone().text());
  assert.is((await whoami(server, guest.api_token)).unread.messages, 0, 'left the workspace');

  const knock = await knockAgent(server, owner, guest, 'hello');
  assert.is(knock.status, 201, JSON.stringify(knock.body));
  assert.is((await whoami(server, guest.api_token)).unread.knocks, 1, 'knocked');
  assert.is((await answerKnock(server, guest, knock.body.knock_id, 'decline')).status, 200);
  assert.is((await whoami(server, guest.api_token)).unread.knocks, 0, 'declined');

  const set = await callJson(server, 'PUT', '/whoami/knock-settings', guest.api_token, {
    direct_knocks: 'nobody',
  });
  assert.is(set.status, 200, JSON.stringify(set.body));
  assert.is((await whoami(server, guest.api_token)).knock_settings.direct_knocks, 'nobody');

  const before = (await whoami(server, owner.api_token)).storage.current_files_bytes;
  await saveFile(server, owner, workspaceId, 'b.txt', '12345');
  assert.is((await whoami(server, owner.api_token)).storage.current_files_bytes, before + 5);
});

test('reading the feed, which changes no count, still shows in the next whoami', async ({
  server,
}) => {
  const agent = await server.signUp();
  assert.is((await whoami(server, agent.api_token)).unread.changes, 1, 'the welcome');
  assert.is((await whoami(server, agent.api_token)).unread.changes, 1, 'asked again');
  assert.is((await server.get('/changes', agent.api_token)).status, 200);
  assert.is((await whoami(server, agent.api_token)).unread.changes, 0, 'read');
});

test('the kept unread counts equal a full recount after a random history of sends, reads, joins and leaves', async ({
  server,
}) => {
  const agents = await Promise.all([1, 2, 3, 4].map(() => server.signUp()));
  const owner = agents[0]!;
  const workspaces = [await newWorkspace(server, owner), await newWorkspace(server, owner)];
  const member = new Set<string>();
  const key = (agent: number, ws: number) => `${agent}/${ws}`;
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let step = 0; step < 120; step++) {
    const a = random(4);
    const w = random(2);
    const agent = agents[a]!;
    const workspaceId = workspaces[w]!;
    const inIt = a === 0 || member.has(key(a, w));
    const move = random(4);
    if (!inIt) {
      await joinWorkspace(server, owner, agent, workspaceId);
      member.add(key(a, w));
    } else if (move === 0 && a !== 0) {
      const left = await server.post(`/workspaces/${workspaceId}/leave`, {}, agent.api_token);
      assert.is(left.status, 200);
      member.delete(key(a, w));
    } else if (move === 1) {
      assert.is((await read(server, agent, workspaceId, '?limit=2')).status, 200);
    } else {
      assert.is((await send(server, agent, workspaceId, `step ${step}`)).status, 201);
    }
    if (step % 10 === 9) {
      for (const each of agents) {
        const [recount] = await server.services.driver.query<{ messages: number }>(
          `select count(*)::int as messages from messages m
           join workspace_members wm on wm.workspace_id = m.workspace_id and wm.agent_id = $1
           left join message_reads r on r.agent_id = $1 and r.workspace_id = m.workspace_id
           where m.seq > coalesce(r.read_seq, 0) and m.sender_id <> $1`,
          [each.agent_id],
        );
        assert.is(
          (await whoami(server, each.api_token)).unread.messages,
          recount?.messages,
          `step ${step}, agent ${each.agent_id}`,
        );
      }
    }
  }
});

test.run();

const two = twoServerSuite('whoami figures across two processes');

two(
  'a message sent through one server shows in whoami on the other once its push arrives there',
  async ({ a, b }) => {
    const owner = await a.signUp();
    const guest = await a.signUp();
    const workspaceId = await newWorkspace(a, owner);
    await joinWorkspace(a, owner, guest, workspaceId);
    const socket = connectSocket(a, guest.api_token);
    try {
      await caughtUp(a, socket, guest);
      assert.is((await whoami(a, guest.api_token)).unread.messages, 0, 'warm on a');
      const pushed = changesUntil(socket, 'message.sent');
      assert.is((await send(b, owner, workspaceId, 'from b')).status, 201);
      await pushed;
      assert.is((await whoami(a, guest.api_token)).unread.messages, 1);
    } finally {
      socket.disconnect();
    }
  },
);

two.run();
