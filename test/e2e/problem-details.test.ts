import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_PATH_BYTES } from '../../protocol/files/path.ts';
import { callTool, connectMcp, toolProblem } from '../helpers/clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * The words of a refusal name what this operation takes, where the caller sends it: the body's
 * or the query's fields (path parameters apart), an example of this operation's body, the path
 * rule that was broken, the path of a missing file.
 */
type Context = { server: TestServer; owner: TestAgent; workspaceId: string; mcp: Client };
const test = suite<Context>('problem details name what this operation takes');

test.before(async (context) => {
  context.server = await startTestServer();
  context.owner = await context.server.signUp('details owner');
  context.workspaceId = await newWorkspace(context.server, context.owner, 'public');
  context.mcp = await connectMcp(context.server, context.owner.api_token, 'details-test');
});
test.after(async ({ server, mcp }) => {
  await mcp.close();
  await server.close();
});

interface Problem {
  code: string;
  title: string;
  detail: string;
  rule?: string;
}

async function problemOf(response: Response, status: number): Promise<Problem> {
  const text = await response.text();
  assert.is(response.status, status, text);
  return JSON.parse(text) as Problem;
}

const send = (
  server: TestServer,
  method: string,
  path: string,
  token: string | undefined,
  body?: string,
  contentType = 'application/json',
) =>
  fetch(server.url(path), {
    method,
    headers: {
      ...(token && { authorization: `Bearer ${token}` }),
      ...(body !== undefined && { 'content-type': contentType }),
    },
    body,
  });

test('an unknown body field lists the fields the body takes and names the path parameter apart', async ({
  server,
  workspaceId,
}) => {
  const stranger = await server.signUp('details stranger');
  const problem = await problemOf(
    await send(
      server,
      'POST',
      `/workspaces/${workspaceId}/knock`,
      stranger.api_token,
      JSON.stringify({ note: 'hello', notes: 'typo' }),
    ),
    400,
  );
  assert.is(problem.code, 'unknown_field');
  assert.match(problem.detail, 'Unknown field `notes`.');
  assert.match(problem.detail, 'The body takes: `note`, `listing_id`.');
  assert.match(problem.detail, '`workspace_id` goes in the path.');
  assert.not.match(problem.detail, /takes: [^.]*`workspace_id`/, 'the path is not offered as body');
  // What the detail offers is taken: the path parameter in the body is refused, the field is not.
  const offered = await send(
    server,
    'POST',
    `/workspaces/${workspaceId}/knock`,
    stranger.api_token,
    JSON.stringify({ note: 'hello' }),
  );
  assert.is(offered.status, 201, await offered.text());
});

test('an unknown query parameter lists the fields the query takes', async ({
  server,
  owner,
  workspaceId,
}) => {
  const problem = await problemOf(
    await send(server, 'GET', `/workspaces/${workspaceId}/files?prefx=a`, owner.api_token),
    400,
  );
  assert.is(problem.code, 'unknown_field');
  assert.match(problem.detail, 'The query takes: `prefix`, `limit`, `cursor`.');
  assert.match(problem.detail, '`workspace_id` goes in the path.');
});

test('over MCP every field is an argument, so an unknown one lists them all', async ({
  mcp,
  workspaceId,
}) => {
  const problem = toolProblem(
    await callTool(mcp, 'create_invite', { workspace_id: workspaceId, hours: 2 }),
  );
  assert.is(problem.code, 'unknown_field');
  assert.match(String(problem.detail), 'This operation takes: `workspace_id`, `expires_in_hours`.');
  assert.not.match(String(problem.detail), 'in the path');
});

test('over MCP an unknown argument of a byte-body tool lists content and content_base64 too', async ({
  mcp,
  workspaceId,
}) => {
  const problem = toolProblem(
    await callTool(mcp, 'write_file', {
      workspace_id: workspaceId,
      path: 'a.md',
      content: 'x',
      text: 'x',
    }),
  );
  assert.is(problem.code, 'unknown_field');
  assert.match(String(problem.detail), 'Unknown field `text`.');
  assert.match(String(problem.detail), '`content`, `content_base64`.');
});

test('invalid JSON shows an example of this operation’s own body, not the sign-up body', async ({
  server,
  owner,
  workspaceId,
}) => {
  const knock = await problemOf(
    await send(server, 'POST', `/workspaces/${workspaceId}/knock`, owner.api_token, '{note:'),
    400,
  );
  assert.is(knock.code, 'invalid_json');
  assert.match(knock.detail, 'e.g. {"note": "..."}');
  assert.not.match(knock.detail, '"name"');
  const invite = await problemOf(
    await send(server, 'POST', `/workspaces/${workspaceId}/invites`, owner.api_token, '{'),
    400,
  );
  assert.match(
    invite.detail,
    'e.g. {"expires_in_hours": 1}',
    'an optional field when none is required',
  );
  const leave = await problemOf(
    await send(server, 'POST', `/workspaces/${workspaceId}/leave`, owner.api_token, 'x'),
    400,
  );
  assert.match(leave.detail, 'e.g. {}.', 'a body of no fields');
  const signUp = await problemOf(await send(server, 'POST', '/agents', undefined, '{'), 400);
  assert.match(signUp.detail, 'e.g. {"name": "..."}');
});

test('an overlong path answers a title that fits its rule, too_long', async ({
  server,
  owner,
  workspaceId,
}) => {
  const problem = await problemOf(
    await send(
      server,
      'GET',
      `/workspaces/${workspaceId}/files/${'a'.repeat(MAX_PATH_BYTES + 1)}`,
      owner.api_token,
    ),
    400,
  );
  assert.is(problem.code, 'invalid_path');
  assert.is(problem.rule, 'too_long');
  assert.match(problem.detail, `longer than ${MAX_PATH_BYTES} bytes`);
  // The title is the code's, whichever rule was broken: it names none of them.
  assert.not.match(problem.title, /empty|NUL|encoded|"\.\."/);
});

test('a missing file answers 404 naming its path, not an id', async ({
  server,
  owner,
  workspaceId,
}) => {
  const missing = await problemOf(
    await send(server, 'GET', `/workspaces/${workspaceId}/files/nowhere.md`, owner.api_token),
    404,
  );
  assert.is(missing.code, 'not_found');
  assert.is(missing.detail, 'There is no file at that path that you can see.');
  await saveFile(server, owner, workspaceId, 'here.md', 'one');
  const version = await problemOf(
    await send(
      server,
      'GET',
      `/workspaces/${workspaceId}/files/here.md?version=9`,
      owner.api_token,
    ),
    404,
  );
  assert.is(
    version.detail,
    'There is no file version with that path and version that you can see.',
  );
  const workspace = await problemOf(
    await send(
      server,
      'GET',
      '/workspaces/00000000-0000-4000-8000-000000000000/files/here.md',
      owner.api_token,
    ),
    404,
  );
  assert.match(workspace.detail, 'with that id', 'a workspace is still asked for by its id');
});

test.run();
