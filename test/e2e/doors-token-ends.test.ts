import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { trustedProxies } from '../../server/http/client-address.ts';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { TestClock } from '../helpers/clock.ts';
import { callJson } from '../helpers/http.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { madeToken, revokeToken, type TokenProblem } from '../helpers/tokens.ts';
import { turnsUntil } from '../helpers/turns.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Issue 32 §4: a token's end (revoked, expired, its agent suspended) ends what it holds open
 * beyond one answer (a parked long-poll over HTTP and MCP, a storage link), and a restricted
 * token gets no answer across its reach from an idempotent replay.
 */
const test = serverSuite<{ clock: TestClock; operatorToken: string }>(
  'doors: a token that ends ends its long-polls and links, and no replay crosses its reach',
  () => {
    const clock = new TestClock();
    const operatorToken = newToken();
    return {
      extra: { clock, operatorToken },
      config: { clock, operatorToken, trustedProxies: trustedProxies('127.0.0.1,::1') },
    };
  },
);

type Kind = 'full' | 'read' | 'workspace';
type End = 'revoked' | 'expired' | 'suspended';

const HOUR_MS = 3_600_000;

async function suspend(server: TestServer, operatorToken: string, agentId: string) {
  const answer = await callJson(
    server,
    'POST',
    `/operator/agents/${agentId}/suspend`,
    operatorToken,
    {
      reason: 'A test of what a suspension ends.',
    },
  );
  assert.is(answer.status, 200, JSON.stringify(answer.body));
}

/** An agent, a workspace of its own, and a second token of `kind` lasting an hour. */
async function holder(server: TestServer, kind: Kind) {
  const agent = await server.signUp();
  const workspace = await newWorkspace(server, agent);
  const scopes =
    kind === 'read' ? ['read'] : kind === 'workspace' ? [`workspace:${workspace}`] : [];
  const made = await madeToken(server, agent.api_token, {
    name: `${kind} token`,
    scopes,
    expires_in_hours: 1,
  });
  // Read to the end, so the parked call below has nothing waiting.
  const read = await callJson(server, 'GET', '/changes?limit=500', made.api_token);
  assert.is(read.status, 200, JSON.stringify(read.body));
  return { agent, workspace, token: made };
}

/** Ends the token as `end` says; `ready` moves the clock to just before an expiry first. */
async function endToken(
  context: { server: TestServer; clock: TestClock; operatorToken: string },
  end: End,
  held: Awaited<ReturnType<typeof holder>>,
) {
  const { server, clock, operatorToken } = context;
  if (end === 'revoked') {
    const revoked = await revokeToken(server, held.agent.api_token, held.token.token_id);
    assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  } else if (end === 'suspended') {
    await suspend(server, operatorToken, held.agent.agent_id);
  } else {
    clock.advance(Date.parse(held.token.expires_at as string) - clock.now() + 1);
  }
}

const KINDS: Kind[] = ['full', 'read', 'workspace'];
const ENDS: End[] = ['revoked', 'expired', 'suspended'];

for (const kind of KINDS) {
  for (const end of ENDS) {
    test(`a long-poll parked with a ${kind} token answers 401 ${end} when its token is ${end}, not the change saved after`, async (context) => {
      const { server, clock } = context;
      const held = await holder(server, kind);
      // An expiry is met within the wait: the clock stands 10 s before it.
      if (end === 'expired') {
        clock.advance(Date.parse(held.token.expires_at as string) - clock.now() - 10_000);
      }
      const parked = callJson<TokenProblem>(
        server,
        'GET',
        '/changes/wait?timeout=60',
        held.token.api_token,
      );
      await turnsUntil(() => server.services.hub.listenerCount(held.agent.agent_id) >= 1);
      await endToken(context, end, held);
      if (end !== 'suspended') {
        await saveFile(server, held.agent, held.workspace, 'after.md', 'saved after the end');
      }
      const answer = await parked;
      assert.is(answer.status, 401, JSON.stringify(answer.body));
      assert.is(answer.body.code, 'unauthorized');
      assert.is(answer.body.reason, end);
      await turnsUntil(() => server.services.hub.listenerCount(held.agent.agent_id) === 0);
    });
  }
}

test('wait_for_changes over MCP, parked, answers the 401 when its token is revoked', async (context) => {
  const { server } = context;
  const held = await holder(server, 'full');
  const client = await mcpClient(context, held.token.api_token);
  const parked = callTool(client, 'wait_for_changes', { timeout: 60 });
  await turnsUntil(() => server.services.hub.listenerCount(held.agent.agent_id) >= 1);
  await endToken(context, 'revoked', held);
  await saveFile(server, held.agent, held.workspace, 'after.md', 'saved after the end');
  const result = await parked;
  assert.ok(result.isError, JSON.stringify(result));
  const problem = toolProblem(result) as TokenProblem;
  assert.is(problem.status, 401);
  assert.is(problem.reason, 'revoked');
});

test('MCP holds no stream open to outlive a token: GET /mcp is refused at once', async ({
  server,
}) => {
  const agent = await server.signUp();
  const answer = await fetch(server.url('/mcp'), {
    headers: { authorization: `Bearer ${agent.api_token}`, accept: 'text/event-stream' },
  });
  assert.is(answer.status, 405);
  await answer.body?.cancel();
});

interface Link {
  container_url: string;
  sas_token: string;
  expires_at: string;
}

async function containerLink(server: TestServer, token: string, workspace: string) {
  const answer = await callJson<Link>(server, 'POST', `/workspaces/${workspace}/sas`, token, {
    access: 'readwrite',
  });
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

/** What a link does now: a Put Blob, a Get Blob and a List Blobs, their statuses and codes. */
async function linkDoes(link: Link) {
  const file = `${link.container_url}/linked.md?${link.sas_token}`;
  const put = await fetch(file, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob' },
    body: 'through the link',
  });
  const get = await fetch(file);
  const list = await fetch(`${link.container_url}?${link.sas_token}&restype=container&comp=list`);
  const seen = [put, get, list].map((r) => `${r.status} ${r.headers.get('x-ms-error-code') ?? ''}`);
  await Promise.all([put, get, list].map((r) => r.body?.cancel()));
  return seen;
}

const WORKS = ['201 ', '200 ', '200 '];
const REFUSED = Array(3).fill('403 AuthenticationFailed');

for (const end of ENDS) {
  test(`a storage link made by a token stops when the token is ${end}: write, read and list answer 403`, async (context) => {
    const { server } = context;
    const held = await holder(server, 'full');
    const link = await containerLink(server, held.token.api_token, held.workspace);
    assert.equal(await linkDoes(link), WORKS, 'before');
    await endToken(context, end, held);
    assert.equal(await linkDoes(link), REFUSED, 'after');
  });
}

test('a storage link lasts no longer than the token that made it', async ({ server, clock }) => {
  const held = await holder(server, 'full');
  clock.advance(HOUR_MS - 5 * 60_000);
  const link = await containerLink(server, held.token.api_token, held.workspace);
  const tokenEnds = Date.parse(held.token.expires_at as string);
  // SAS times are to the second: the link ends within the second before the token.
  assert.ok(Date.parse(link.expires_at) <= tokenEnds, `${link.expires_at} is not past the token`);
  assert.ok(Date.parse(link.expires_at) > tokenEnds - 1000, `${link.expires_at} ends with it`);
});

test('a storage link of a read token stays read-only', async ({ server }) => {
  const held = await holder(server, 'read');
  const refused = await callJson<TokenProblem>(
    server,
    'POST',
    `/workspaces/${held.workspace}/sas`,
    held.token.api_token,
    { access: 'readwrite' },
  );
  assert.is(refused.status, 403);
  assert.is(refused.body.code, 'token_scope');
  const read = await callJson<Link>(
    server,
    'POST',
    `/workspaces/${held.workspace}/sas`,
    held.token.api_token,
    { access: 'read' },
  );
  assert.is(read.status, 200);
  const seen = await linkDoes(read.body);
  assert.is(seen[0], '403 AuthorizationPermissionMismatch', 'no write');
});

/** POST with an Idempotency-Key (and, for an anonymous caller, the address it comes from). */
function keyed(
  server: TestServer,
  path: string,
  key: string,
  body: unknown,
  caller: { token?: string; from?: string },
) {
  return fetch(server.url(path), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'idempotency-key': key,
      ...(caller.token && { authorization: `Bearer ${caller.token}` }),
      ...(caller.from && { 'x-forwarded-for': caller.from }),
    },
    body: JSON.stringify(body),
  }).then(async (response) => ({
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    body: (await response.json()) as Record<string, unknown>,
  }));
}

test('a restricted token repeating a full token’s Idempotency-Key gets its own refusal, never the replay', async ({
  server,
}) => {
  const agent = await server.signUp();
  const w1 = await newWorkspace(server, agent);
  const w2 = await newWorkspace(server, agent);
  const one = await madeToken(server, agent.api_token, { name: 'w1', scopes: [`workspace:${w1}`] });
  const reader = await madeToken(server, agent.api_token, { name: 'r', scopes: ['read'] });
  const key = crypto.randomUUID();
  const message = { text: 'to W2' };
  const path = `/workspaces/${w2}/messages`;
  const first = await keyed(server, path, key, message, { token: agent.api_token });
  assert.is(first.status, 201, JSON.stringify(first.body));
  for (const [what, token] of [
    ['workspace:W1', one.api_token],
    ['read', reader.api_token],
  ] as const) {
    const again = await keyed(server, path, key, message, { token });
    assert.is(again.status, 403, `${what}: ${JSON.stringify(again.body)}`);
    assert.is(again.body.code, 'token_scope', what);
    assert.not.ok(again.replayed, what);
  }
  const replay = await keyed(server, path, key, message, { token: agent.api_token });
  assert.ok(replay.replayed, 'the full token still gets its replay');
  assert.equal(replay.body, first.body);
});

test('anonymous Idempotency-Keys are each caller address’s own: two callers never share one', async ({
  server,
}) => {
  const key = crypto.randomUUID();
  const feedback = { message: 'the same words', category: 'other' };
  const a = await keyed(server, '/feedback', key, feedback, { from: '203.0.113.1' });
  const b = await keyed(server, '/feedback', key, feedback, { from: '203.0.113.2' });
  const aAgain = await keyed(server, '/feedback', key, feedback, { from: '203.0.113.1' });
  assert.is(a.status, 202, JSON.stringify(a.body));
  assert.is(b.status, 202, JSON.stringify(b.body));
  assert.is.not(a.body.feedback_id, b.body.feedback_id, 'another caller: its own feedback');
  assert.not.ok(b.replayed);
  assert.ok(aAgain.replayed, 'the same caller: its replay');
  assert.is(aAgain.body.feedback_id, a.body.feedback_id);
});

test.run();
