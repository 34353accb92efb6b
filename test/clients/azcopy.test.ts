import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import * as assert from 'uvu/assert';
import { sha256 } from '../helpers/digests.ts';
import { tree } from '../helpers/disk-files.ts';
import { clientSuite, type ExternalClient } from '../helpers/real-clients.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { storageLink } from '../helpers/storage-links.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * azcopy, Microsoft's own copy tool (npm @azure-tools/azcopy-linux), against a storage link of
 * a running service: a nested folder copied up, listed and copied down byte for byte. azcopy
 * names nested blobs with `%2F` (`top%2Fmid%2Fc.bin`), which the link door decodes to `/`.
 *
 * The binary comes from npm, but it is linked against libsecret (for its login cache, unused
 * with a SAS), which Debian ships as libsecret-1-0: without it azcopy does not start.
 */
const AZCOPY: ExternalClient = {
  name: 'azcopy (its libsecret)',
  probe: ['/bin/sh', '-c', 'ldconfig -p | grep -q "libsecret-1\\.so\\.0"'],
  debian: 'libsecret-1-0',
};

const test = clientSuite<{ server: TestServer; azcopy: string; scratch: string }>('azcopy', AZCOPY);

const run = promisify(execFile);
const SHIPPED = resolve(
  import.meta.dirname,
  '../../node_modules/@azure-tools/azcopy-linux/dist/bin/azcopy_linux_amd64',
);

test.before(async (context) => {
  context.scratch = mkdtempSync(join(tmpdir(), 'azcopy-test-'));
  onTestsEnd(async () => rmSync(context.scratch, { recursive: true, force: true }));
  // npm installs the binary without its execute bit: a copy of our own gets it.
  context.azcopy = join(context.scratch, 'azcopy');
  copyFileSync(SHIPPED, context.azcopy);
  chmodSync(context.azcopy, 0o755);
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

/**
 * Runs azcopy to its end without blocking the server it talks to; its home, logs and job plans
 * in the scratch folder, and no login of the machine's user (a SAS is all it may use).
 */
async function azcopy(scratch: string, binary: string, ...args: string[]) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: join(scratch, 'home'),
    AZCOPY_LOG_LOCATION: join(scratch, 'logs'),
    AZCOPY_JOB_PLAN_LOCATION: join(scratch, 'plans'),
    AZCOPY_CONCURRENCY_VALUE: '4',
    AZCOPY_DISABLE_SYSLOG: 'true',
  };
  try {
    return await run(binary, args, { env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`azcopy ${args[0]} failed:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}

function plant(root: string, files: Record<string, Buffer>) {
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), bytes);
  }
}

async function filesOf(server: TestServer, agent: Agent, id: string) {
  const response = await server.get(`/workspaces/${id}/files`, agent.api_token);
  return ((await response.json()) as { files: { path: string; sha256: string }[] }).files;
}

test('azcopy copies a nested folder up, lists it and copies it down byte for byte', async ({
  server,
  azcopy: binary,
  scratch,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const container = `${link.container_url}?${link.sas_token}`;
  const source = join(scratch, 'source');
  // Three levels deep, a name with a space and an accent, and one file over the 1 MiB block
  // size given below, so azcopy sends Put Block and Put Block List under a %2F name too.
  plant(source, {
    'project/readme.md': Buffer.from('# nested\n'),
    'project/src/main.ts': Buffer.from('export {};\n'),
    'project/src/lib/café notes.txt': Buffer.from('accent and space\n'),
    'project/data/raw/big.bin': randomBytes(2.5 * 1024 * 1024),
  });
  await azcopy(
    scratch,
    binary,
    'copy',
    join(source, 'project'),
    container,
    '--recursive',
    '--from-to',
    'LocalBlob',
    '--block-size-mb',
    '1',
  );

  const local = tree(source);
  const stored = await filesOf(server, owner, id);
  assert.equal(
    stored.map((file) => [file.path, file.sha256]),
    [...local].map(([path, bytes]) => [path, sha256(bytes)]),
  );

  const listed = await azcopy(
    scratch,
    binary,
    'list',
    container,
    '--location',
    'Blob',
    '--machine-readable',
  );
  // One line a blob, `<name>; Content Length: <bytes>`, in the order its workers finish.
  const names = listed.stdout
    .split('\n')
    .filter((line) => line.includes('; Content Length: '))
    .map((line) => line.split('; Content Length: '))
    .map(([name, size]) => [name, Number(size)])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));
  assert.equal(
    names,
    [...local].map(([path, bytes]) => [path, bytes.length]),
  );

  const target = join(scratch, 'target');
  mkdirSync(target);
  await azcopy(scratch, binary, 'copy', container, target, '--recursive', '--from-to', 'BlobLocal');
  // azcopy puts a container's blobs in a folder named after the container.
  assert.equal(tree(join(target, id)), local);
});

test('azcopy copies one file to a file link and back, as /protocol shows it', async ({
  server,
  azcopy: binary,
  scratch,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite', 'data/big.parquet');
  const bytes = randomBytes(300 * 1024);
  const local = join(scratch, 'big.parquet');
  writeFileSync(local, bytes);
  const fileUrl = link.file_url as string;
  await azcopy(scratch, binary, 'copy', local, fileUrl, '--from-to', 'LocalBlob');
  const stored = await filesOf(server, owner, id);
  assert.equal(
    stored.map((file) => [file.path, file.sha256]),
    [['data/big.parquet', sha256(bytes)]],
  );
  const back = join(scratch, 'back.parquet');
  await azcopy(scratch, binary, 'copy', fileUrl, back, '--from-to', 'BlobLocal');
  assert.ok(readFileSync(back).equals(bytes));
});

/** azcopy's count of files it sent, from its closing summary. */
function transfers(summary: string): number {
  const count = /Total Number of Copy Transfers: (\d+)/.exec(summary)?.[1];
  if (count === undefined) throw new Error(`azcopy printed no transfer count:\n${summary}`);
  return Number(count);
}

test('azcopy sync of a decomposed (NFD) name converges: the second and third runs send nothing', async ({
  server,
  azcopy: binary,
  scratch,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const container = `${link.container_url}?${link.sas_token}`;
  const source = join(scratch, 'sync-nfd');
  const nfd = 'u\u0308-nfd.txt';
  plant(source, {
    [nfd]: Buffer.from('decomposed name\n'),
    'dir/caf\u00e9.txt': Buffer.from('composed name\n'),
  });
  // Written an hour ago: azcopy sends a file whose local time is after the blob's Last-Modified,
  // which has whole seconds only, so a file written in the second it was sent would go again.
  const anHourAgo = new Date(Date.now() - 3_600_000);
  for (const path of [nfd, 'dir/caf\u00e9.txt'])
    utimesSync(join(source, path), anHourAgo, anHourAgo);
  const sync = async () =>
    transfers(
      (await azcopy(scratch, binary, 'sync', source, container, '--from-to', 'LocalBlob')).stdout,
    );

  assert.is(await sync(), 2);
  // Listed as it was saved: the NFD name stays NFD, so azcopy finds its own name there.
  const stored = await filesOf(server, owner, id);
  assert.equal(stored.map((file) => file.path).sort(), ['dir/caf\u00e9.txt', nfd]);
  assert.is(await sync(), 0, 'the second sync sends nothing');
  assert.is(await sync(), 0, 'the third sync sends nothing');
});

test('azcopy with a read link uploads nothing and the workspace stays as it was', async ({
  server,
  azcopy: binary,
  scratch,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'read');
  const source = join(scratch, 'refused');
  plant(source, { 'deep/er/file.txt': Buffer.from('not for a read link\n') });
  const refused = await azcopy(
    scratch,
    binary,
    'copy',
    source,
    `${link.container_url}?${link.sas_token}`,
    '--recursive',
    '--from-to',
    'LocalBlob',
  ).then(
    () => 'copied',
    (error: Error) => error.message,
  );
  assert.match(refused, /AuthorizationPermissionMismatch|403/);
  assert.equal(await filesOf(server, owner, id), []);
});

test.run();
