import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { TestClock } from '../helpers/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** Workspaces and invites over HTTP (and one round over MCP), on a clock the test moves. */
const test = suite<{ server: TestServer; clock: TestClock }>('workspaces and invites');

test.before(async (context) => {
  context.clock = new TestClock();
  context.server = await startTestServer({ clock: context.clock });
});
test.after(async ({ server }) => {
  await server.close();
});

type Json = Record<string, unknown>;
type Agent = { agent_id: string; name: string; api_token: string };

async function call(
  server: TestServer,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: Json; text: string }> {
  const response = await fetch(server.url(path), {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Json) : {}, text };
}

const create = async (server: TestServer, owner: Agent, body: Json = {}) =>
  (await call(server, 'POST', '/workspaces', owner.api_token, body)).body as {
    workspace_id: string;
  };

const invite = async (server: TestServer, member: Agent, workspaceId: string, body: Json = {}) =>
  call(server, 'POST', `/workspaces/${workspaceId}/invites`, member.api_token, body);

const redeem = (server: TestServer, agent: Agent, token: string) =>
  call(server, 'POST', '/invites/redeem', agent.api_token, { invite_token: token });

async function typesOf(server: TestServer, agent: Agent): Promise<string[]> {
  const page = (await call(server, 'GET', '/changes', agent.api_token)).body as {
    changes: { type: string }[];
  };
  return page.changes.map((change) => change.type);
}

test('a new workspace is private by default, owned by its maker, and listed with its role', async ({
  server,
}) => {
  const owner = await server.signUp();
  const made = await call(server, 'POST', '/workspaces', owner.api_token, { name: 'Logo work' });
  assert.is(made.status, 201);
  const id = (made.body as { workspace_id: string }).workspace_id;
  assert.equal(made.body, {
    workspace_id: id,
    visibility: 'private',
    name: 'Logo work',
    owner_agent_id: owner.agent_id,
  });
  const shown = await call(server, 'GET', `/workspaces/${id}`, owner.api_token);
  assert.equal(shown.body, {
    workspace_id: id,
    visibility: 'private',
    name: 'Logo work',
    owner: { agent_id: owner.agent_id, name: owner.name },
    members: [{ agent_id: owner.agent_id, name: owner.name, role: 'owner' }],
  });
  const listed = (await call(server, 'GET', '/workspaces', owner.api_token)).body as {
    workspaces: { workspace_id: string; role: string }[];
    next_cursor: string | null;
  };
  assert.equal(
    listed.workspaces.map((w) => [w.workspace_id, w.role]),
    [[id, 'owner']],
  );
  assert.is(listed.next_cursor, null);
});

test('a private workspace is, to a stranger, exactly a workspace that does not exist; a public one is readable', async ({
  server,
}) => {
  const owner = await server.signUp();
  const stranger = await server.signUp();
  const secret = await create(server, owner);
  const open = await create(server, owner, { visibility: 'public' });
  const hidden = await call(
    server,
    'GET',
    `/workspaces/${secret.workspace_id}`,
    stranger.api_token,
  );
  const missing = await call(
    server,
    'GET',
    '/workspaces/6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20',
    stranger.api_token,
  );
  assert.is(hidden.status, 404);
  assert.is(hidden.text, missing.text);
  const hiddenInvite = await invite(server, stranger, secret.workspace_id);
  assert.is(hiddenInvite.status, 404, 'inviting to it: the same 404');
  assert.is(hiddenInvite.body.detail, missing.body.detail);
  assert.is(
    (await call(server, 'GET', `/workspaces/${open.workspace_id}`, stranger.api_token)).status,
    200,
  );
  // Readable is not writable: only the owner invites to a public workspace.
  const refused = await invite(server, stranger, open.workspace_id);
  assert.is(refused.status, 403);
  assert.is(refused.body.code, 'forbidden');
});

test('an invite admits one agent: it joins, every member hears of it, and the token is spent', async ({
  server,
}) => {
  const owner = await server.signUp();
  const guest = await server.signUp();
  const late = await server.signUp();
  const { workspace_id } = await create(server, owner);
  const made = await invite(server, owner, workspace_id);
  assert.is(made.status, 201);
  const token = (made.body as { invite_token: string }).invite_token;
  assert.match(token, /^asvi_/);
  assert.is(
    Date.parse((made.body as { expires_at: string }).expires_at) - server.services.clock.now(),
    168 * 3_600_000,
    'seven days by default',
  );
  const joined = await redeem(server, guest, token);
  assert.equal(joined, { status: 200, body: { workspace_id, role: 'member' }, text: joined.text });
  const members = (await call(server, 'GET', `/workspaces/${workspace_id}`, guest.api_token)).body
    .members as { agent_id: string; role: string }[];
  assert.equal(
    members.map((m) => [m.agent_id, m.role]),
    [
      [owner.agent_id, 'owner'],
      [guest.agent_id, 'member'],
    ],
  );
  assert.ok((await typesOf(server, owner)).includes('invite.joined'));
  assert.ok((await typesOf(server, guest)).includes('invite.joined'));

  const again = await redeem(server, late, token);
  assert.is(again.status, 409);
  assert.is(again.body.code, 'invite_already_used');
  const listed = (await call(server, 'GET', `/workspaces/${workspace_id}/invites`, owner.api_token))
    .body as { invites: Json[] };
  assert.equal(listed.invites[0]?.status, 'joined');
  assert.equal(listed.invites[0]?.joined_agent_id, guest.agent_id);
  assert.not.ok('invite_token' in (listed.invites[0] ?? {}), 'tokens are never shown again');
});

test('a member leaves: it no longer reads the workspace, the members left hear of it, and the owner cannot leave', async ({
  server,
}) => {
  const owner = await server.signUp();
  const guest = await server.signUp();
  const stranger = await server.signUp();
  const { workspace_id } = await create(server, owner);
  const token = ((await invite(server, owner, workspace_id)).body as { invite_token: string })
    .invite_token;
  await redeem(server, guest, token);
  const leave = (agent: Agent) =>
    call(server, 'POST', `/workspaces/${workspace_id}/leave`, agent.api_token, {});
  const ownerLeaving = await leave(owner);
  assert.is(ownerLeaving.status, 409);
  assert.is(ownerLeaving.body.code, 'owner_cannot_leave');
  const strangerLeaving = await leave(stranger);
  assert.is(strangerLeaving.status, 404);
  assert.is(strangerLeaving.body.code, 'not_found');
  const left = await leave(guest);
  assert.equal(left.body, { workspace_id, left: true });
  assert.is(
    (await call(server, 'GET', `/workspaces/${workspace_id}`, guest.api_token)).status,
    404,
  );
  assert.is((await leave(guest)).status, 404, 'leaving twice: no longer a member');
  const members = (await call(server, 'GET', `/workspaces/${workspace_id}`, owner.api_token)).body
    .members as { agent_id: string }[];
  assert.equal(
    members.map((m) => m.agent_id),
    [owner.agent_id],
  );
  assert.ok((await typesOf(server, owner)).includes('workspace.left'));
  const listed = (await call(server, 'GET', '/workspaces', guest.api_token)).body as {
    workspaces: unknown[];
  };
  assert.equal(listed.workspaces, []);
});

test('two agents redeeming one token at the same moment: exactly one joins', async ({ server }) => {
  const owner = await server.signUp();
  const rivals = await Promise.all([server.signUp(), server.signUp(), server.signUp()]);
  const { workspace_id } = await create(server, owner);
  const token = ((await invite(server, owner, workspace_id)).body as { invite_token: string })
    .invite_token;
  const answers = await Promise.all(rivals.map((rival) => redeem(server, rival, token)));
  assert.equal(answers.map((a) => a.status).sort(), [200, 409, 409]);
  const members = (await call(server, 'GET', `/workspaces/${workspace_id}`, owner.api_token)).body
    .members as unknown[];
  assert.is(members.length, 2);
});

test('an invite runs out on time: redeeming answers 410, the list shows it expired, and the job records it', async ({
  server,
  clock,
}) => {
  const owner = await server.signUp();
  const guest = await server.signUp();
  const { workspace_id } = await create(server, owner);
  const made = await invite(server, owner, workspace_id, { expires_in_hours: 0.5 });
  const { invite_id, invite_token } = made.body as { invite_id: string; invite_token: string };
  clock.advance(30 * 60_000 - 1);
  const listed = async () =>
    (
      (await call(server, 'GET', `/workspaces/${workspace_id}/invites`, owner.api_token)).body as {
        invites: { invite_id: string; status: string }[];
      }
    ).invites.find((i) => i.invite_id === invite_id)?.status;
  assert.is(await listed(), 'pending', 'one millisecond before its time');
  clock.advance(1);
  assert.is(await listed(), 'expired', 'shown expired at once, before the job has run');
  const refused = await redeem(server, guest, invite_token);
  assert.is(refused.status, 410);
  assert.is(refused.body.code, 'invite_expired');

  // The expiry job (every minute) records it even though nobody looks.
  clock.advance(60_000);
  await server.scheduler.idle();
  const [row] = await server.services.driver.query<{ status: string }>(
    'select status from invites where invite_id = $1',
    [invite_id],
  );
  assert.is(row?.status, 'expired');
});

test('bad input gets a code: hours out of range, unknown tokens, foreign cursors', async ({
  server,
}) => {
  const owner = await server.signUp();
  const { workspace_id } = await create(server, owner);
  for (const hours of [0, -1, 721, 'soon']) {
    const answer = await invite(server, owner, workspace_id, { expires_in_hours: hours });
    assert.is(answer.status, 400, `expires_in_hours ${String(hours)}`);
    assert.is(answer.body.field, 'expires_in_hours');
  }
  for (const token of ['asvi_nonsense', 'asvc_not_an_invite', '']) {
    const answer = await redeem(server, owner, token);
    assert.is(answer.status, token === '' ? 400 : 404, `token ${JSON.stringify(token)}`);
  }
  const notUuid = await call(server, 'GET', '/workspaces/not-a-uuid', owner.api_token);
  assert.is(notUuid.status, 400);
  for (const cursor of ['garbage', Buffer.from('i\u0000x').toString('base64url')]) {
    const answer = await call(server, 'GET', `/workspaces?cursor=${cursor}`, owner.api_token);
    assert.is(answer.status, 400);
    assert.is(answer.body.code, 'invalid_cursor');
  }
  const badName = await call(server, 'POST', '/workspaces', owner.api_token, { name: 'a\u0000b' });
  assert.is(badName.status, 400);
  const extra = await call(server, 'POST', '/workspaces', owner.api_token, { owner: 'me' });
  assert.is(extra.body.code, 'unknown_field');
});

test('workspaces are listed a page at a time, each once', async ({ server }) => {
  const owner = await server.signUp();
  const made = new Set<string>();
  for (let i = 0; i < 5; i++) made.add((await create(server, owner)).workspace_id);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = (
      await call(
        server,
        'GET',
        `/workspaces?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        owner.api_token,
      )
    ).body as { workspaces: { workspace_id: string }[]; next_cursor: string | null };
    assert.ok(page.workspaces.length <= 2);
    seen.push(...page.workspaces.map((w) => w.workspace_id));
    cursor = page.next_cursor;
  } while (cursor);
  assert.equal(new Set(seen), made);
  assert.is(seen.length, 5);
});

test('over MCP the same operations work with the same answers', async ({ server }) => {
  const owner = await server.signUp();
  const client = new Client({ name: 'workspace-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
      requestInit: { headers: { authorization: `Bearer ${owner.api_token}` } },
    }),
  );
  try {
    const made = (await client.callTool({
      name: 'create_workspace',
      arguments: { visibility: 'public', name: 'shop' },
    })) as unknown as { structuredContent: { workspace_id: string; visibility: string } };
    assert.is(made.structuredContent.visibility, 'public');
    const shown = (await client.callTool({
      name: 'get_workspace',
      arguments: { workspace_id: made.structuredContent.workspace_id },
    })) as unknown as { structuredContent: { members: unknown[] } };
    assert.is(shown.structuredContent.members.length, 1);
  } finally {
    await client.close();
  }
});

test.run();
