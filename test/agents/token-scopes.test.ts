import * as assert from 'uvu/assert';
import { callJson, request, type JsonAnswer } from '../helpers/http.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  assertScopeRefusal,
  madeToken,
  toolRefusal,
  type TokenProblem,
} from '../helpers/tokens.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Restricted tokens at the HTTP and MCP doors: a `read` token may not write, a
 * `workspace:<id>` token reaches that workspace only (and nothing of the whole account), and
 * each refusal is `403 token_scope` naming the scope the token lacks. Over MCP the refusal is
 * a tool result with isError, whether the token came as the header or as `api_token`.
 */
const test = serverSuite('token scopes at the HTTP and MCP doors');

/** An agent with a workspace holding `notes.txt`, and a token of each kind for it. */
async function scopedAgent(server: TestServer) {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const otherId = await newWorkspace(server, agent);
  await saveFile(server, agent, workspaceId, 'notes.txt', 'mine');
  await saveFile(server, agent, otherId, 'notes.txt', 'other');
  const read = await madeToken(server, agent.api_token, { name: 'reader', scopes: ['read'] });
  const one = await madeToken(server, agent.api_token, {
    name: 'one workspace',
    scopes: [`workspace:${workspaceId}`],
  });
  return { agent, workspaceId, otherId, read: read.api_token, one: one.api_token };
}

type Call = readonly [method: string, path: string, body?: unknown];

const as = (server: TestServer, token: string, [method, path, body]: Call) =>
  callJson<TokenProblem>(server, method, path, token, body);

/** A file write through the HTTP door: its body is the file's bytes, not JSON. */
const put = (server: TestServer, token: string, path: string) =>
  request<TokenProblem>(server, 'PUT', path, { token, text: 'new words' });

function assertServed(answer: JsonAnswer<TokenProblem>, what: string) {
  assert.ok(answer.status < 300, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
}

test('a read token writing anything gets 403 token_scope needing `write`, and nothing is written', async ({
  server,
}) => {
  const { agent, workspaceId, read } = await scopedAgent(server);
  const writes: Call[] = [
    ['POST', '/workspaces', { visibility: 'private' }],
    ['POST', `/workspaces/${workspaceId}/messages`, { text: 'hello' }],
    ['POST', '/listings', { kind: 'can', name: 'Proofreading', description: 'd', can: 'c' }],
    ['POST', '/feedback', { message: 'hi', category: 'other' }],
    ['DELETE', `/workspaces/${workspaceId}/files/notes.txt`],
    ['POST', `/workspaces/${workspaceId}/invites`, {}],
  ];
  for (const call of writes) {
    const answer = await as(server, read, call);
    assertScopeRefusal(answer, 'write', `${call[0]} ${call[1]}`);
    assert.equal(answer.body.scopes, ['read']);
  }
  assertScopeRefusal(
    await put(server, read, `/workspaces/${workspaceId}/files/notes.txt`),
    'write',
    'write_file',
  );
  const file = await server.get(`/workspaces/${workspaceId}/files/notes.txt`, agent.api_token);
  assert.is(await file.text(), 'mine', 'the file is as it was');
  const workspaces = await callJson<{ workspaces: unknown[] }>(
    server,
    'GET',
    '/workspaces',
    agent.api_token,
  );
  assert.is(workspaces.body.workspaces.length, 2, 'no workspace was made');
});

test('a read token reads what its agent may read', async ({ server }) => {
  const { workspaceId, otherId, read } = await scopedAgent(server);
  const reads: Call[] = [
    ['GET', '/whoami'],
    ['GET', '/workspaces'],
    ['GET', `/workspaces/${workspaceId}`],
    ['GET', `/workspaces/${otherId}/files`],
    ['GET', `/workspaces/${workspaceId}/receipts`],
    ['GET', '/store'],
    ['GET', '/listings/mine'],
    ['POST', '/index/sql', { sql: 'select path from files' }],
  ];
  for (const call of reads) assertServed(await as(server, read, call), `${call[0]} ${call[1]}`);
  const file = await server.get(`/workspaces/${workspaceId}/files/notes.txt`, read);
  assert.is(await file.text(), 'mine');
});

test('a workspace token reaching another workspace gets 403 token_scope naming that workspace', async ({
  server,
}) => {
  const { otherId, one } = await scopedAgent(server);
  const needed = `workspace:${otherId}`;
  const calls: Call[] = [
    ['GET', `/workspaces/${otherId}`],
    ['GET', `/workspaces/${otherId}/files`],
    ['GET', `/workspaces/${otherId}/files/notes.txt`],
    ['POST', `/workspaces/${otherId}/messages`, { text: 'hello' }],
    ['POST', `/workspaces/${otherId}/invites`, {}],
    ['GET', `/deals?workspace_id=${otherId}&path=deal.md`],
  ];
  for (const call of calls) assertScopeRefusal(await as(server, one, call), needed, call[1]);
  assertScopeRefusal(
    await put(server, one, `/workspaces/${otherId}/files/notes.txt`),
    needed,
    'write_file',
  );
});

test('a workspace token reads and writes its own workspace', async ({ server }) => {
  const { agent, workspaceId, one } = await scopedAgent(server);
  assertServed(await put(server, one, `/workspaces/${workspaceId}/files/notes.txt`), 'write');
  const calls: Call[] = [
    ['GET', `/workspaces/${workspaceId}`],
    ['GET', `/workspaces/${workspaceId}/files`],
    ['POST', `/workspaces/${workspaceId}/messages`, { text: 'hello' }],
    ['GET', `/workspaces/${workspaceId}/messages`],
  ];
  for (const call of calls) assertServed(await as(server, one, call), `${call[0]} ${call[1]}`);
  const file = await server.get(`/workspaces/${workspaceId}/files/notes.txt`, agent.api_token);
  assert.is(await file.text(), 'new words');
});

test('a workspace token gets 403 token_scope needing `account` for what reaches beyond one workspace', async ({
  server,
}) => {
  const { one } = await scopedAgent(server);
  const calls: Call[] = [
    ['GET', '/workspaces'],
    ['POST', '/workspaces', { visibility: 'private' }],
    ['POST', '/index/sql', { sql: 'select path from files' }],
    ['GET', `/deals?deal_id=${crypto.randomUUID()}`],
    ['GET', '/deals/mine'],
    ['GET', '/listings/mine'],
    ['POST', '/listings', { kind: 'can', name: 'Proofreading', description: 'd', can: 'c' }],
    ['GET', '/knocks'],
    ['GET', '/watches'],
  ];
  for (const call of calls) {
    assertScopeRefusal(await as(server, one, call), 'account', `${call[0]} ${call[1]}`);
  }
});

test('a workspace token may still ask whoami, its changes and the public reads', async ({
  server,
}) => {
  const { agent, one } = await scopedAgent(server);
  const calls: Call[] = [
    ['GET', '/whoami'],
    ['GET', '/changes'],
    ['GET', '/store'],
    ['GET', '/conventions'],
    ['GET', `/agents/${agent.agent_id}`],
    ['GET', `/agents/${agent.agent_id}/reputation`],
    ['GET', '/whoami/knock-settings'],
    ['POST', '/feedback', { message: 'hi', category: 'other' }],
  ];
  for (const call of calls) assertServed(await as(server, one, call), `${call[0]} ${call[1]}`);
});

test('over MCP a restricted token’s refusal is a tool result with isError and code token_scope, by header and by api_token', async (context) => {
  const { server } = context;
  const { workspaceId, otherId, read, one } = await scopedAgent(server);
  const write = { workspace_id: workspaceId, path: 'notes.txt', content: 'by mcp' };

  const readByHeader = await mcpClient(context, read);
  const anonymous = await mcpClient(context, '');
  for (const [door, problem] of [
    ['header', await toolRefusal(readByHeader, 'write_file', write)],
    ['api_token', await toolRefusal(anonymous, 'write_file', { ...write, api_token: read })],
  ] as const) {
    assert.is(problem?.code, 'token_scope', door);
    assert.is(problem?.status, 403, door);
    assert.is(problem?.needed, 'write', door);
  }
  assert.is(await toolRefusal(readByHeader, 'list_files', { workspace_id: workspaceId }), null);

  const oneByHeader = await mcpClient(context, one);
  const other = { workspace_id: otherId, path: 'notes.txt' };
  for (const [door, problem] of [
    ['header', await toolRefusal(oneByHeader, 'read_file', other)],
    ['api_token', await toolRefusal(anonymous, 'read_file', { ...other, api_token: one })],
  ] as const) {
    assert.is(problem?.code, 'token_scope', door);
    assert.is(problem?.needed, `workspace:${otherId}`, door);
  }
  const beyond = await toolRefusal(anonymous, 'list_workspaces', { api_token: one });
  assert.is(beyond?.code, 'token_scope');
  assert.is(beyond?.needed, 'account');
  assert.is(
    await toolRefusal(oneByHeader, 'read_file', { workspace_id: workspaceId, path: 'notes.txt' }),
    null,
  );
});

test('/openapi.json lists the four token operations', async ({ server }) => {
  const spec = (await (await server.get('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { operationId?: string }>>;
  };
  const ids = Object.values(spec.paths).flatMap((item) =>
    Object.values(item).map((operation) => operation.operationId),
  );
  for (const name of ['create_token', 'list_tokens', 'revoke_token', 'rotate_token']) {
    assert.ok(ids.includes(name), `${name} is in /openapi.json`);
  }
  assert.ok(spec.paths['/whoami/tokens']?.post, 'POST /whoami/tokens');
  assert.ok(spec.paths['/whoami/tokens/{token_id}']?.delete, 'DELETE /whoami/tokens/{token_id}');
});

test('a read token reads messages without moving the read mark; the full token still sees them unread', async ({
  server,
}) => {
  const { agent, workspaceId, read } = await scopedAgent(server);
  const friend = await server.signUp();
  const invite = await callJson<{ invite_token: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/invites`,
    agent.api_token,
    {},
  );
  await callJson(server, 'POST', '/invites/redeem', friend.api_token, {
    invite_token: invite.body.invite_token,
  });
  await callJson(server, 'POST', `/workspaces/${workspaceId}/messages`, friend.api_token, {
    text: 'for your eyes',
  });
  const unread = async () =>
    (await callJson<{ unread: { messages: number } }>(server, 'GET', '/whoami', agent.api_token))
      .body.unread.messages;
  assert.is(await unread(), 1);
  const seen = await callJson<{ messages: { text: string }[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/messages`,
    read,
  );
  assert.is(seen.status, 200, JSON.stringify(seen.body));
  assert.equal(
    seen.body.messages.map((message) => message.text),
    ['for your eyes'],
  );
  assert.is(await unread(), 1, 'the read token moved nothing');
});

test.run();
