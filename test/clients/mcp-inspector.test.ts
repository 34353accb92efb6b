import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * The MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector-cli), as a person runs it
 * against the service: Streamable HTTP at `<server>/mcp`, the token as an `Authorization`
 * header, one method per run, its answer as JSON on stdout.
 */
const test = suite<{ server: TestServer; agent: Agent }>('MCP Inspector CLI');

const BUILD = resolve(
  import.meta.dirname,
  '../../node_modules/@modelcontextprotocol/inspector-cli/build',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.agent = await context.server.signUp('inspected agent');
});
test.after(async ({ server }) => {
  await server.close();
});

/**
 * Runs the Inspector CLI to its end and parses its JSON answer. Asynchronous: the service
 * answers from this same process. Its working folder is its build folder, where it finds the
 * package.json it names itself from.
 */
function inspector(server: TestServer, agent: Agent, ...args: string[]): Promise<unknown> {
  const argv = [
    resolve(BUILD, 'index.js'),
    server.url('/mcp'),
    '--transport',
    'http',
    '--header',
    `Authorization: Bearer ${agent.api_token}`,
    ...args,
  ];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, argv, { cwd: BUILD, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill(), 60_000);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) fail(new Error(`inspector ${args.join(' ')} exited ${code}: ${stderr}`));
      else done(JSON.parse(stdout));
    });
  });
}

interface CallResult {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
}

test('tools/list names the tools an agent starts with', async ({ server, agent }) => {
  const { tools } = (await inspector(server, agent, '--method', 'tools/list')) as {
    tools: { name: string; inputSchema: { type: string } }[];
  };
  const names = tools.map((tool) => tool.name);
  for (const name of ['sign_up', 'whoami', 'write_file', 'get_service_keys', 'get_agent_profile'])
    assert.ok(names.includes(name), name);
  for (const tool of tools) assert.is(tool.inputSchema.type, 'object', tool.name);
});

test('tools/call of whoami answers the agent the header names', async ({ server, agent }) => {
  const result = (await inspector(
    server,
    agent,
    '--method',
    'tools/call',
    '--tool-name',
    'whoami',
  )) as CallResult;
  assert.not.ok(result.isError, JSON.stringify(result));
  assert.is(result.structuredContent?.agent_id, agent.agent_id);
  assert.is(result.structuredContent?.name, 'inspected agent');
  assert.ok(result.content[0]?.text.includes(agent.agent_id));
});

test('tools/call with a bad argument is a tool error whose problem shows its code', async ({
  server,
  agent,
}) => {
  const result = (await inspector(
    server,
    agent,
    '--method',
    'tools/call',
    '--tool-name',
    'get_agent_profile',
    '--tool-arg',
    'agent_id=not-an-id',
  )) as CallResult;
  assert.ok(result.isError, JSON.stringify(result));
  const problem = JSON.parse(result.content[0]?.text ?? '{}') as { code?: string; status?: number };
  assert.is(problem.code, 'invalid_input');
  assert.is(problem.status, 400);
});

test('resources/list and resources/read serve /llms.txt by its absolute URL', async ({
  server,
  agent,
}) => {
  const { resources } = (await inspector(server, agent, '--method', 'resources/list')) as {
    resources: { uri: string; mimeType?: string }[];
  };
  const uri = server.url('/llms.txt');
  assert.ok(
    resources.some((resource) => resource.uri === uri),
    JSON.stringify(resources.map((resource) => resource.uri)),
  );
  for (const resource of resources) assert.ok(resource.uri.startsWith(server.url('/')));

  const read = (await inspector(server, agent, '--method', 'resources/read', '--uri', uri)) as {
    contents: { uri: string; mimeType?: string; text?: string }[];
  };
  const over = await fetch(uri);
  const served = await over.text();
  assert.is(read.contents.length, 1);
  assert.is(read.contents[0]?.uri, uri);
  assert.is(read.contents[0]?.mimeType, over.headers.get('content-type')?.split(';')[0]);
  assert.is(read.contents[0]?.text, served);
});

test.run();
