import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as assert from 'uvu/assert';
import { md5Base64, sha256 } from '../helpers/digests.ts';
import { tree } from '../helpers/disk-files.ts';
import { AZURE_CLI, clientSuite } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { storageLink, type StorageLink } from '../helpers/storage-links.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * The Azure CLI (Debian's `az`) against a container storage link. az needs an account: the
 * link's `container_url` without its last segment (`<base_url>/blob`) is the blob endpoint and
 * its `sas_token` the credential, given either as a connection string
 * (`BlobEndpoint=...;SharedAccessSignature=...`) or as `--blob-endpoint` and `--sas-token`;
 * the workspace id is the container. az starts in about a second: the suite runs it 7 times.
 */
const test = clientSuite<{ server: TestServer; scratch: string }>('Azure CLI (az)', AZURE_CLI);

test.before(async (context) => {
  context.server = await startTestServer();
  context.scratch = mkdtempSync(join(tmpdir(), 'azure-cli-'));
});
test.after(async ({ server, scratch }) => {
  await server.close();
  rmSync(scratch, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `az storage blob <args>` to its end without blocking the server it talks to, with a
 * config folder of its own (no login of the machine's user, no telemetry) and JSON output.
 */
function az(scratch: string, ...args: string[]): Promise<Ran> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: join(scratch, 'home'),
    AZURE_CONFIG_DIR: join(scratch, 'azure'),
    AZURE_CORE_COLLECT_TELEMETRY: 'false',
    AZURE_CORE_NO_COLOR: '1',
  };
  const argv = ['storage', 'blob', ...args, '--only-show-errors', '-o', 'json'];
  return new Promise((done) => {
    execFile('az', argv, { env, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (error, out, err) =>
      done({
        code: error ? ((error.code as number | undefined) ?? 1) : 0,
        stdout: out,
        stderr: err,
      }),
    );
  });
}

/** az's JSON answer; fails the test, with what az said, when it did not succeed. */
async function azJson<T>(scratch: string, ...args: string[]): Promise<T> {
  const ran = await az(scratch, ...args);
  assert.is(ran.code, 0, `az storage blob ${args[0]}: ${ran.stderr}`);
  return JSON.parse(ran.stdout) as T;
}

/** The blob endpoint and SAS of a container link: `<base_url>/blob` and its `sas_token`. */
function account(link: StorageLink) {
  const containerUrl = link.container_url as string;
  return {
    endpoint: containerUrl.slice(0, containerUrl.lastIndexOf('/')),
    sas: link.sas_token as string,
  };
}

const connectionString = (link: StorageLink) =>
  `BlobEndpoint=${account(link).endpoint};SharedAccessSignature=${account(link).sas}`;

type Listed = { files: { path: string; sha256: string; version: number }[] };

async function filesOf(server: TestServer, agent: Agent, id: string) {
  const response = await server.get(`/workspaces/${id}/files`, agent.api_token);
  assert.is(response.status, 200);
  return ((await response.json()) as Listed).files;
}

interface ShownBlob {
  name: string;
  metadata: Record<string, string>;
  properties: {
    contentLength: number;
    contentSettings: { contentMd5: string | null };
  };
}

test('az uploads a file with its MD5 and metadata, shows both, and downloads it byte for byte', async ({
  server,
  scratch,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const bytes = randomBytes(70_000);
  const local = join(scratch, 'report.bin');
  writeFileSync(local, bytes);

  const uploaded = await azJson<{ etag: string; version_id: string; content_md5: string }>(
    scratch,
    'upload',
    '--connection-string',
    connectionString(link),
    '--container-name',
    id,
    '--name',
    'reports/2026/report.bin',
    '--file',
    local,
    '--content-md5',
    md5Base64(bytes),
    '--metadata',
    'colour=blue',
    'project=alpha',
  );
  assert.is(uploaded.etag, `"${sha256(bytes)}"`);
  assert.is(uploaded.version_id, '1');
  assert.is(uploaded.content_md5, md5Base64(bytes), 'the MD5 the service computed');
  assert.equal(
    (await filesOf(server, owner, id)).map((file) => [file.path, file.sha256, file.version]),
    [['reports/2026/report.bin', sha256(bytes), 1]],
  );

  const shown = await azJson<ShownBlob>(
    scratch,
    'show',
    '--connection-string',
    connectionString(link),
    '--container-name',
    id,
    '--name',
    'reports/2026/report.bin',
  );
  assert.is(shown.name, 'reports/2026/report.bin');
  assert.is(shown.properties.contentLength, bytes.length);
  assert.is(shown.properties.contentSettings.contentMd5, md5Base64(bytes));
  assert.equal(shown.metadata, { colour: 'blue', project: 'alpha' });

  const back = join(scratch, 'report.back');
  await azJson(
    scratch,
    'download',
    '--connection-string',
    connectionString(link),
    '--container-name',
    id,
    '--name',
    'reports/2026/report.bin',
    '--file',
    back,
  );
  assert.ok(readFileSync(back).equals(bytes), 'the same bytes');
});

test('az uploading with a wrong MD5 is refused with Md5Mismatch and the file stays as it was', async ({
  server,
  scratch,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const first = Buffer.from('the first version\n');
  const write = await fetch(
    `${link.container_url as string}/kept.txt?${link.sas_token as string}`,
    {
      method: 'PUT',
      headers: { 'x-ms-blob-type': 'BlockBlob' },
      body: first,
    },
  );
  assert.is(write.status, 201);
  const before = await filesOf(server, owner, id);

  const local = join(scratch, 'kept.txt');
  writeFileSync(local, 'a second version whose MD5 is not the one stated\n');
  const refused = await az(
    scratch,
    'upload',
    '--connection-string',
    connectionString(link),
    '--container-name',
    id,
    '--name',
    'kept.txt',
    '--file',
    local,
    '--overwrite',
    '--content-md5',
    md5Base64(first),
  );
  assert.is.not(refused.code, 0, 'az failed');
  assert.match(refused.stderr, /Md5Mismatch/);
  assert.equal(await filesOf(server, owner, id), before, 'nothing stored');
});

test('az upload-batch, list and download-batch carry a nested folder up and down', async ({
  server,
  scratch,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const { endpoint, sas } = account(link);
  const source = join(scratch, 'source');
  const planted: Record<string, Buffer> = {
    'readme.md': Buffer.from('# nested\n'),
    'src/main.ts': Buffer.from('export {};\n'),
    'src/lib/café notes.txt': Buffer.from('accent and space\n'),
    'data/raw/big.bin': randomBytes(400_000),
  };
  for (const [path, bytes] of Object.entries(planted)) {
    mkdirSync(dirname(join(source, path)), { recursive: true });
    writeFileSync(join(source, path), bytes);
  }
  const local = tree(source);

  await azJson(
    scratch,
    'upload-batch',
    '--blob-endpoint',
    endpoint,
    '--sas-token',
    sas,
    '--destination',
    id,
    '--destination-path',
    'backup',
    '--source',
    source,
    '--metadata',
    'origin=batch',
  );
  assert.equal(
    (await filesOf(server, owner, id)).map((file) => [file.path, file.sha256]),
    [...local].map(([path, bytes]) => [`backup/${path}`, sha256(bytes)]),
  );

  const listed = await azJson<ShownBlob[]>(
    scratch,
    'list',
    '--blob-endpoint',
    endpoint,
    '--sas-token',
    sas,
    '--container-name',
    id,
    '--prefix',
    'backup/',
    '--include',
    'm',
  );
  assert.equal(
    listed
      .map((blob) => [
        blob.name,
        blob.properties.contentLength,
        blob.properties.contentSettings.contentMd5,
        blob.metadata,
      ])
      .sort(([a], [b]) => String(a).localeCompare(String(b))),
    [...local].map(([path, bytes]) => [
      `backup/${path}`,
      bytes.length,
      md5Base64(bytes),
      { origin: 'batch' },
    ]),
  );

  const target = join(scratch, 'target');
  mkdirSync(target);
  await azJson(
    scratch,
    'download-batch',
    '--blob-endpoint',
    endpoint,
    '--sas-token',
    sas,
    '--source',
    id,
    '--destination',
    target,
    '--pattern',
    'backup/*',
  );
  assert.equal(tree(join(target, 'backup')), local);
});

test.run();
