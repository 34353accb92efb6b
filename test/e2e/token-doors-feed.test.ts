import * as assert from 'uvu/assert';
import { TestClock } from '../helpers/clock.ts';
import { callJson, type JsonAnswer } from '../helpers/http.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  assertScopeRefusal,
  madeToken,
  toolRefusal,
  type TokenProblem,
} from '../helpers/tokens.ts';
import { turnsUntil } from '../helpers/turns.ts';
import type { ChangesPage } from '../helpers/wire-types.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * The changes feed (GET /changes, the long-poll) and storage links with restricted tokens: a
 * restricted token reads from and moves its own place, never the agent's remembered one; a
 * workspace token sees only that workspace's changes and its long-poll wakes only for them;
 * a `read` token may ask for a `read` storage link but not a `readwrite` one.
 */
const test = serverSuite<{ clock: TestClock }>(
  'token doors: the feed and storage links hold restricted tokens to their scopes',
  () => {
    const clock = new TestClock();
    return { extra: { clock }, config: { clock } };
  },
);

const page = async (server: TestServer, token: string, query = '') => {
  const limit = query.includes('limit=') ? '' : '&limit=500';
  const answer = await callJson<ChangesPage>(server, 'GET', `/changes?${limit}${query}`, token);
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
};

const files = (changes: ChangesPage['changes']) =>
  changes.filter((c) => c.type === 'file.saved').map((c) => [c.workspace_id, c.data.path]);

test('a restricted token reads from its own place and leaves the agent remembered place where it was', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspace = await newWorkspace(server, agent);
  await page(server, agent.api_token);
  const reader = await madeToken(server, agent.api_token, { name: 'reader', scopes: ['read'] });
  await saveFile(server, agent, workspace, 'one.md', 'one');

  const first = await page(server, reader.api_token);
  assert.equal(files(first.changes), [[workspace, 'one.md']]);
  assert.equal((await page(server, reader.api_token)).changes, [], 'its own place moved');
  const agents = await page(server, agent.api_token);
  assert.equal(files(agents.changes), [[workspace, 'one.md']], 'the agent place did not');
  assert.is(agents.cursor, first.cursor, 'cursors are the agent feed own');
});

test('with after, a restricted token reads from there and moves its own place on', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspace = await newWorkspace(server, agent);
  const start = await page(server, agent.api_token);
  await saveFile(server, agent, workspace, 'a.md', 'a');
  const scoped = await madeToken(server, agent.api_token, {
    name: 'one workspace',
    scopes: [`workspace:${workspace}`],
  });
  // Made after the save: without `after` it has nothing; from an older cursor it reads it.
  assert.equal((await page(server, scoped.api_token)).changes, []);
  const resumed = await page(server, scoped.api_token, `&after=${start.cursor}`);
  assert.equal(files(resumed.changes), [[workspace, 'a.md']]);
  await saveFile(server, agent, workspace, 'b.md', 'b');
  assert.equal(files((await page(server, scoped.api_token)).changes), [[workspace, 'b.md']]);
  // The agent's remembered place was moved by none of it.
  assert.equal(files((await page(server, agent.api_token)).changes), [
    [workspace, 'a.md'],
    [workspace, 'b.md'],
  ]);
});

test('a workspace token sees only its workspace changes, and its cursor is good for the full token', async ({
  server,
}) => {
  const agent = await server.signUp();
  const mine = await newWorkspace(server, agent);
  const other = await newWorkspace(server, agent);
  await page(server, agent.api_token);
  const scoped = await madeToken(server, agent.api_token, {
    name: 'one workspace',
    scopes: [`workspace:${mine}`],
  });
  await saveFile(server, agent, mine, 'mine-1.md', '1');
  await saveFile(server, agent, other, 'other.md', 'x');
  await saveFile(server, agent, mine, 'mine-2.md', '2');
  await saveFile(server, agent, other, 'other-last.md', 'y');

  const firstPage = await page(server, scoped.api_token, '&limit=1');
  assert.equal(files(firstPage.changes), [[mine, 'mine-1.md']]);
  const rest = await page(server, scoped.api_token);
  assert.equal(files(rest.changes), [[mine, 'mine-2.md']]);
  assert.ok(
    rest.changes.every((change) => change.workspace_id === mine),
    'nothing of another workspace',
  );
  // The page reached past the other workspace's last change: the full token, resuming from
  // the scoped cursor, has nothing more; from the first page's cursor it has the rest.
  assert.equal((await page(server, agent.api_token, `&after=${rest.cursor}`)).changes, []);
  assert.equal(files((await page(server, agent.api_token, `&after=${firstPage.cursor}`)).changes), [
    [other, 'other.md'],
    [mine, 'mine-2.md'],
    [other, 'other-last.md'],
  ]);
});

test('a workspace token long-poll wakes for its workspace change and not for another', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const mine = await newWorkspace(server, agent);
  const other = await newWorkspace(server, agent);
  const scoped = await madeToken(server, agent.api_token, {
    name: 'one workspace',
    scopes: [`workspace:${mine}`],
  });
  const listening = server.services.hub.listenerCount(agent.agent_id);
  let answered = false;
  const waiting = callJson<ChangesPage>(
    server,
    'GET',
    '/changes/wait?timeout=60',
    scoped.api_token,
  ).then((answer) => {
    answered = true;
    return answer;
  });
  await turnsUntil(() => server.services.hub.listenerCount(agent.agent_id) === listening + 1);
  // Another workspace's change is published before its save answers: the wait goes on.
  await saveFile(server, agent, other, 'not-yours.md', 'x');
  await saveFile(server, agent, other, 'not-yours-either.md', 'y');
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.not.ok(answered, 'no early, empty answer for another workspace change');
  clock.advance(59_999);
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.not.ok(answered, 'still waiting within its time-out');
  assert.is(server.services.hub.listenerCount(agent.agent_id), listening + 1);
  await saveFile(server, agent, mine, 'yours.md', 'z');
  const woken: JsonAnswer<ChangesPage> = await waiting;
  assert.is(woken.status, 200, JSON.stringify(woken.body));
  assert.equal(files(woken.body.changes), [[mine, 'yours.md']]);
  assert.ok(woken.body.changes.every((change) => change.workspace_id === mine));
});

test('a workspace token long-poll that times out answers an empty page past the other workspaces', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const mine = await newWorkspace(server, agent);
  const other = await newWorkspace(server, agent);
  const scoped = await madeToken(server, agent.api_token, {
    name: 'one workspace',
    scopes: [`workspace:${mine}`],
  });
  const listening = server.services.hub.listenerCount(agent.agent_id);
  const waiting = callJson<ChangesPage>(server, 'GET', '/changes/wait?timeout=5', scoped.api_token);
  await turnsUntil(() => server.services.hub.listenerCount(agent.agent_id) === listening + 1);
  await saveFile(server, agent, other, 'not-yours.md', 'x');
  clock.advance(5_000);
  const answer = await waiting;
  assert.is(answer.status, 200);
  assert.equal(answer.body.changes, []);
  const full = await page(server, agent.api_token);
  assert.is(answer.body.cursor, full.cursor, 'the place moved past what it passed over');
});

test('a read token may ask for a read storage link, and a readwrite one is 403 token_scope', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const workspace = await newWorkspace(server, agent);
  const reader = await madeToken(server, agent.api_token, { name: 'reader', scopes: ['read'] });
  const link = (token: string, access: string) =>
    callJson<TokenProblem>(server, 'POST', `/workspaces/${workspace}/sas`, token, { access });

  const read = await link(reader.api_token, 'read');
  assert.is(read.status, 200, JSON.stringify(read.body));
  assert.is((read.body as { access?: string }).access, 'read');
  assertScopeRefusal(await link(reader.api_token, 'readwrite'), 'write', 'readwrite link');
  const withPath = await callJson<TokenProblem>(
    server,
    'POST',
    `/workspaces/${workspace}/sas`,
    reader.api_token,
    { access: 'readwrite', path: 'big.bin' },
  );
  assertScopeRefusal(withPath, 'write', 'readwrite link to one file');
  assert.is((await link(agent.api_token, 'readwrite')).status, 200, 'the full token may');

  // MCP holds it the same way.
  const client = await mcpClient(context, reader.api_token);
  assert.is(
    await toolRefusal(client, 'get_storage_link', { workspace_id: workspace, access: 'read' }),
    null,
  );
  const refused = await toolRefusal(client, 'get_storage_link', {
    workspace_id: workspace,
    access: 'readwrite',
  });
  assert.equal([refused?.code, refused?.needed], ['token_scope', 'write']);
});

test('a workspace token may not ask for a storage link to another workspace, even to read', async ({
  server,
}) => {
  const agent = await server.signUp();
  const mine = await newWorkspace(server, agent);
  const other = await newWorkspace(server, agent);
  const scoped = await madeToken(server, agent.api_token, {
    name: 'read one workspace',
    scopes: ['read', `workspace:${mine}`],
  });
  const ask = (workspace: string) =>
    callJson<TokenProblem>(server, 'POST', `/workspaces/${workspace}/sas`, scoped.api_token, {
      access: 'read',
    });
  assert.is((await ask(mine)).status, 200);
  assertScopeRefusal(await ask(other), `workspace:${other}`, 'another workspace');
});

test.run();
