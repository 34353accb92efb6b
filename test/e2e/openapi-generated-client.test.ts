import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import createClient from 'openapi-fetch';
import openapiTS, { astToString } from 'openapi-typescript';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A client generated from the served /openapi.json, as a newcomer would make one: types from
 * openapi-typescript, calls through openapi-fetch. The generated types are compiled (with a
 * client written against them) by TypeScript, and the same calls run against a real server:
 * sign up, make a workspace, save a nested file (openapi-fetch percent-encodes the whole
 * `{path}`, so it arrives as `dir%2Fsub%2Ffile.md`), read it back, list the files.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const TSC_TIME_LIMIT_MS = 180_000;

interface Context {
  server: TestServer;
  dir: string;
  document: Record<string, unknown>;
}

const test = suite<Context>(
  'a client generated from /openapi.json (openapi-typescript, openapi-fetch)',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.dir = mkdtempSync(join(tmpdir(), 'openapi-client-'));
  context.document = (await (await context.server.get('/openapi.json')).json()) as Record<
    string,
    unknown
  >;
});
test.after(async ({ server, dir }) => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What a person would write against the generated `paths`: type errors fail the test. */
const TYPED_CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './schema.ts';

export async function story(baseUrl: string): Promise<string | undefined> {
  const client = createClient<paths>({ baseUrl });
  const signedUp = await client.POST('/agents', { body: { name: 'generated client' } });
  const token: string | undefined = signedUp.data?.api_token;
  const headers = { authorization: \`Bearer \${token}\` };
  const made = await client.POST('/workspaces', { body: { visibility: 'private' }, headers });
  const workspace_id: string = made.data?.workspace_id ?? '';
  const saved = await client.PUT('/workspaces/{workspace_id}/files/{path}', {
    params: { path: { workspace_id, path: 'dir/sub/file.md' } },
    body: new TextEncoder().encode('# Nested') as unknown as string,
    bodySerializer: (bytes) => bytes as unknown as BodyInit,
    headers: { ...headers, 'content-type': 'text/markdown' },
  });
  const version: number | undefined = saved.data?.receipt.version;
  const listed = await client.GET('/workspaces/{workspace_id}/files', {
    params: { path: { workspace_id } },
    headers,
  });
  const paths: string[] | undefined = listed.data?.files.map((file) => file.path);
  return \`\${version} \${paths?.join()}\`;
}
`;

function compile(dir: string): Promise<{ code: number | null; output: string }> {
  const config = {
    compilerOptions: {
      strict: true,
      noEmit: true,
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      lib: ['es2022', 'dom'],
      types: [],
      paths: { 'openapi-fetch': [join(ROOT, 'node_modules/openapi-fetch/dist/index.d.mts')] },
    },
    files: ['client.ts'],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`tsc did not finish in ${TSC_TIME_LIMIT_MS} ms`));
    }, TSC_TIME_LIMIT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

test('openapi-typescript generates types that a client written against them compiles with', async ({
  dir,
  document,
}) => {
  const source = astToString(await openapiTS(document as never));
  assert.match(source, /"\/workspaces\/\{workspace_id\}\/files\/\{path\}"/);
  assert.match(source, /write_file/);
  writeFileSync(join(dir, 'schema.ts'), source);
  writeFileSync(join(dir, 'client.ts'), TYPED_CLIENT);
  const { code, output } = await compile(dir);
  assert.is(code, 0, output);
});

/** The calls of TYPED_CLIENT, run: here the paths are the served document's, untyped. */
test('the generated client signs up, saves a nested file, reads it back and lists it', async ({
  document,
}) => {
  const baseUrl = (document.servers as { url: string }[])[0]?.url ?? '';
  const paths = document.paths as Record<string, Record<string, unknown>>;
  for (const [path, method] of [
    ['/agents', 'post'],
    ['/workspaces', 'post'],
    ['/workspaces/{workspace_id}/files/{path}', 'put'],
    ['/workspaces/{workspace_id}/files/{path}', 'get'],
    ['/workspaces/{workspace_id}/files', 'get'],
  ] as const)
    assert.ok(paths[path]?.[method], `${method} ${path} is in the document`);
  // A client over the document's paths, with their types left open.
  type Open = Record<string, Record<string, unknown>>;
  const client = createClient<Open>({ baseUrl });
  const call = client as unknown as Record<
    'GET' | 'POST' | 'PUT',
    (
      path: string,
      init: Record<string, unknown>,
    ) => Promise<{
      data?: unknown;
      error?: unknown;
      response: Response;
    }>
  >;
  const signedUp = await call.POST('/agents', { body: { name: 'generated client' } });
  assert.is(signedUp.response.status, 201, JSON.stringify(signedUp.error));
  const token = (signedUp.data as { api_token: string }).api_token;
  const headers = { authorization: `Bearer ${token}` };
  const made = await call.POST('/workspaces', { body: { visibility: 'private' }, headers });
  assert.is(made.response.status, 201, JSON.stringify(made.error));
  const workspaceId = (made.data as { workspace_id: string }).workspace_id;
  const file = { workspace_id: workspaceId, path: 'dir/sub/file.md' };

  const saved = await call.PUT('/workspaces/{workspace_id}/files/{path}', {
    params: { path: file },
    body: new TextEncoder().encode('# Nested\n'),
    bodySerializer: (bytes: Uint8Array) => bytes,
    headers: { ...headers, 'content-type': 'text/markdown' },
  });
  assert.match(saved.response.url, /dir%2Fsub%2Ffile\.md$/, 'the whole path was encoded');
  assert.is(saved.response.status, 201, JSON.stringify(saved.error));
  const receipt = (saved.data as { receipt: { path: string; version: number } }).receipt;
  assert.is(receipt.path, 'dir/sub/file.md', 'saved under the decoded path');

  const read = await call.GET('/workspaces/{workspace_id}/files/{path}', {
    params: { path: file },
    headers,
    parseAs: 'text',
  });
  assert.is(read.response.status, 200, JSON.stringify(read.error));
  assert.is(read.data, '# Nested\n');
  assert.match(read.response.headers.get('content-type') ?? '', /^text\/markdown/);

  const listed = await call.GET('/workspaces/{workspace_id}/files', {
    params: { path: { workspace_id: workspaceId } },
    headers,
  });
  assert.is(listed.response.status, 200, JSON.stringify(listed.error));
  assert.equal(
    (listed.data as { files: { path: string }[] }).files.map((entry) => entry.path),
    ['dir/sub/file.md'],
  );

  // An encoded `..` is still refused, with nothing written.
  const escape = await call.PUT('/workspaces/{workspace_id}/files/{path}', {
    params: { path: { workspace_id: workspaceId, path: 'dir/../../x.md' } },
    body: new TextEncoder().encode('no'),
    bodySerializer: (bytes: Uint8Array) => bytes,
    headers,
  });
  assert.is(escape.response.status, 400);
  assert.is((escape.error as { code: string }).code, 'invalid_path');
});

test.run();
