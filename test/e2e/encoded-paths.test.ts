import createClient from 'openapi-fetch';
import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  blockId,
  blockListXml,
  putBlob,
  putBlock,
  putBlockList,
  rawSend,
  refusedAndNothingStored,
  sendToLink,
  storageLink,
} from '../helpers/storage-links.ts';
import type { Agent, Problem } from '../helpers/wire-types.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * File paths sent percent-encoded as a whole, as generated OpenAPI clients, Azure SDKs and
 * azcopy send nested names: `%2F` is `/` at the REST and storage-link doors, and every path rule
 * holds for the decoded path, so an encoded `..` climbs no further than a plain one. Look-alike
 * separators are refused at every door, MCP included.
 */
const test = serverSuite('encoded file paths');

const filesOf = async (server: TestServer, agent: Agent, id: string) => {
  const response = await server.get(`/workspaces/${id}/files`, agent.api_token);
  return ((await response.json()) as { files: { path: string }[] }).files.map((f) => f.path);
};

/** A REST request that travels exactly as written: no URL normalisation of `..` or `%2E`. */
async function rawRest(server: TestServer, agent: Agent, method: string, path: string) {
  const { response } = await rawSend(server, method, path, {
    headers: { authorization: `Bearer ${agent.api_token}` },
    body: method === 'PUT' ? 'escaped' : undefined,
  });
  const text = await response.text();
  return { status: response.status, text, problem: (text ? JSON.parse(text) : {}) as Problem };
}

test('a path percent-encoded whole reaches the same file as plain slashes, in either case', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const receipt = await saveFile(server, owner, id, 'dir%2Fsub%2Fnote.md', 'nested');
  assert.is(receipt.path, 'dir/sub/note.md');
  for (const spelt of ['dir/sub/note.md', 'dir%2fsub%2Fnote.md', 'dir/sub%2Fnote.md']) {
    const read = await server.get(`/workspaces/${id}/files/${spelt}`, owner.api_token);
    assert.is(read.status, 200, spelt);
    assert.is(await read.text(), 'nested', spelt);
  }
  await saveFile(server, owner, id, 'dir/sub/note.md', 'again');
  assert.equal(await filesOf(server, owner, id), ['dir/sub/note.md']);
});

test('a generated OpenAPI client (openapi-fetch) saves and reads a nested path', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  // The route as /openapi.json names it; openapi-fetch encodes each path parameter whole.
  const route = '/workspaces/{workspace_id}/files/{path}';
  type Parameters = { path: { workspace_id: string; path: string } };
  type Read = {
    parameters: Parameters;
    responses: { 200: { content: { 'text/plain': string } } };
  };
  type Write = {
    parameters: Parameters;
    requestBody: { content: { 'application/octet-stream': string } };
    responses: { 201: { content: { 'application/json': unknown } } };
  };
  const client = createClient<{ [route]: { put: Write; get: Read } }>({
    baseUrl: server.url(''),
    headers: { authorization: `Bearer ${owner.api_token}` },
  });
  const params = { path: { workspace_id: id, path: 'reports/2026/q1.txt' } };
  const saved = await client.PUT(route, {
    params,
    body: 'first quarter',
    bodySerializer: (body: string) => body,
  });
  assert.is(saved.response.status, 201);
  assert.match(new URL(saved.response.url).pathname, /\/files\/reports%2F2026%2Fq1\.txt$/);
  const read = await client.GET(route, { params, parseAs: 'text' });
  assert.is(read.data, 'first quarter');
  assert.equal(await filesOf(server, owner, id), ['reports/2026/q1.txt']);
});

// Each encoded spelling beside the plain one it decodes to (where one can be sent at all).
const REFUSED: [string, string][] = [
  ['a%2F..%2Fb', 'dot_segment'],
  ['..%2F..%2Fetc%2Fpasswd', 'dot_segment'],
  ['a%2F%2E%2E%2Fb', 'dot_segment'],
  ['a%2F.%2Fb', 'dot_segment'],
  ['a%2F%2Fb', 'empty_segment'],
  ['a%2F', 'empty_segment'],
  ['%2Fetc%2Fpasswd', 'leading_slash'],
  ['a%2F%00.md', 'control_character'],
  ['a%2F%0A.md', 'control_character'],
  ['a%2F%E2%80%AEgpj.exe', 'bidi_control'],
  ['a%5C..%5Cb', 'backslash'],
  ['a%EF%BC%BCb', 'backslash'],
  ['a%E2%88%95..%E2%88%95b', 'lookalike_separator'],
  ['a%E2%81%84b', 'lookalike_separator'],
  ['a%EF%BC%8Fb', 'lookalike_separator'],
  ['a%E2%A7%B8b', 'lookalike_separator'],
  [`${'x'.repeat(600)}%2F${'y'.repeat(600)}`, 'too_long'],
];

test('an encoded .., ., empty segment, control or look-alike is refused as a plain one, and nothing is written', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  for (const [path, rule] of REFUSED) {
    const answer = await rawRest(server, owner, 'PUT', `/workspaces/${id}/files/${path}`);
    assert.is(answer.status, 400, `${path.slice(0, 30)}: ${answer.text}`);
    assert.is(answer.problem.code, 'invalid_path', path.slice(0, 30));
    assert.is(answer.problem.rule, rule, path.slice(0, 30));
  }
  // The plain spellings of the first ones answer the same rule.
  for (const [plain, encoded] of [
    ['a/../b', 'a%2F..%2Fb'],
    ['a//b', 'a%2F%2Fb'],
    ['a\\..\\b', 'a%5C..%5Cb'],
  ]) {
    const one = await rawRest(server, owner, 'PUT', `/workspaces/${id}/files/${plain}`);
    const other = await rawRest(server, owner, 'PUT', `/workspaces/${id}/files/${encoded}`);
    assert.equal([one.status, one.problem.rule], [other.status, other.problem.rule], plain);
  }
  assert.equal(await filesOf(server, owner, id), []);
  const receipts = await server.get(`/workspaces/${id}/receipts`, owner.api_token);
  assert.equal(((await receipts.json()) as { receipts: unknown[] }).receipts, []);
});

test('%2F in a workspace id is part of the id, never a separator that reaches its files', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'kept.txt', 'kept');
  const listed = await rawRest(server, owner, 'GET', `/workspaces/${id}%2Ffiles`);
  assert.ok(listed.status >= 400 && listed.status < 500, listed.text);
  assert.not.match(listed.text, /kept\.txt/);
  const read = await rawRest(server, owner, 'GET', `/workspaces/${id}%2Ffiles%2Fkept.txt`);
  assert.ok(read.status >= 400 && read.status < 500, read.text);
  assert.not.match(read.text, /^kept$/);
  const written = await rawRest(server, owner, 'PUT', `/workspaces/${id}%2Ffiles%2Fnew.txt`);
  assert.ok(written.status >= 400 && written.status < 500, written.text);
  assert.equal(await filesOf(server, owner, id), ['kept.txt']);
});

test('a storage link takes a nested blob name sent with %2F, whole or in blocks, as azcopy sends it', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const blob = (name: string) => `${link.container_url}/${name}?${link.sas_token}`;
  assert.is((await putBlob(blob('top%2Fmid%2Fa.txt'), 'whole')).response.status, 201);
  const url = blob('top%2fmid%2Fdeep%2Fb.bin');
  assert.is((await putBlock(url, blockId(0), 'one ')).response.status, 201);
  assert.is((await putBlock(url, blockId(1), 'two')).response.status, 201);
  const committed = await putBlockList(url, blockListXml([blockId(0), blockId(1)]));
  assert.is(committed.response.status, 201);
  assert.equal(await filesOf(server, owner, id), ['top/mid/a.txt', 'top/mid/deep/b.bin']);
  const plain = await sendToLink(blob('top/mid/deep/b.bin'));
  assert.is(await plain.response.text(), 'one two');
  const encoded = await sendToLink(blob('top%2Fmid%2Fa.txt'));
  assert.is(await encoded.response.text(), 'whole');
});

test('a file link signed for a nested path takes the path sent with %2F, and no other', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite', 'dir/only.txt');
  const url = new URL(link.file_url as string);
  const encoded = `${url.origin}/blob/${id}/dir%2Fonly.txt${url.search}`;
  assert.is((await putBlob(encoded, 'mine')).response.status, 201);
  assert.equal(await filesOf(server, owner, id), ['dir/only.txt']);
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      rawSend(server, 'PUT', `/blob/${id}/dir%2F..%2Fonly.txt${url.search}`, {
        headers: { 'x-ms-blob-type': 'BlockBlob' },
        body: 'climbed',
      }),
    400,
    'InvalidResourceName',
  );
});

test('at a storage link an encoded .., empty segment or look-alike answers 400 InvalidResourceName and stores nothing', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  for (const [name] of REFUSED) {
    await refusedAndNothingStored(
      server,
      owner,
      [id],
      () =>
        rawSend(server, 'PUT', `/blob/${id}/${name}?${link.sas_token}`, {
          headers: { 'x-ms-blob-type': 'BlockBlob' },
          body: 'escaped',
        }),
      400,
      'InvalidResourceName',
      name.slice(0, 30),
    );
  }
  assert.equal(await filesOf(server, owner, id), []);
});

test('MCP refuses backslashes and look-alike separators with the same rules', async (context) => {
  const owner = await context.server.signUp();
  const id = await newWorkspace(context.server, owner);
  const client = await mcpClient(context, owner.api_token);
  const cases: [string, string][] = [
    ['a\\..\\b.txt', 'backslash'],
    ['a\u2215..\u2215b.txt', 'lookalike_separator'],
    ['a\u2044b.txt', 'lookalike_separator'],
    ['a\uff0fb.txt', 'lookalike_separator'],
    ['a\u2216b.txt', 'lookalike_separator'],
  ];
  for (const [path, rule] of cases) {
    const result = await callTool(client, 'write_file', { workspace_id: id, path, content: 'x' });
    assert.ok(result.isError, path);
    const problem = toolProblem(result);
    assert.is(problem.code, 'invalid_path', path);
    assert.is(problem.rule, rule, path);
  }
  // MCP takes paths decoded: `%2F` there is three characters of a name, not a separator.
  const literal = await callTool(client, 'write_file', {
    workspace_id: id,
    path: 'a%2Fb.txt',
    content: 'x',
  });
  assert.not.ok(literal.isError);
  assert.equal(await filesOf(context.server, owner, id), ['a%2Fb.txt']);
  const read = await context.server.get(`/workspaces/${id}/files/a%252Fb.txt`, owner.api_token);
  assert.is(await read.text(), 'x');
});

test.run();
