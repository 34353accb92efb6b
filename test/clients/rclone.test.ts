import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { RCLONE, clientSuite } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { storageLink } from '../helpers/storage-links.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * rclone (Debian's) against a container storage link: a remote of type azureblob whose SAS URL
 * is the link. With a container SAS the remote's paths start with the workspace id (the
 * container): `x:<workspace_id>/dir`. rclone compares MD5s (`rclone check`), and skips files
 * whose size, MD5 and modification time (kept as `x-ms-meta-mtime`) match: a second copy
 * uploads nothing.
 */
const test = clientSuite<{ server: TestServer; dir: string }>('rclone over a storage link', RCLONE);

test.before(async (context) => {
  context.server = await startTestServer({});
  context.dir = mkdtempSync(join(tmpdir(), 'rclone-link-'));
});
test.after(async ({ server, dir }) => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs rclone with the remote `x` configured from the environment (no config file). */
function rclone(sasUrl: string, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const env = {
    ...process.env,
    RCLONE_CONFIG: '/dev/null',
    RCLONE_CONFIG_X_TYPE: 'azureblob',
    RCLONE_CONFIG_X_SAS_URL: sasUrl,
  };
  // Asynchronous: the service answers from this same process.
  return new Promise((resolve, reject) => {
    execFile('rclone', args, { env, timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`rclone ${args.join(' ')} failed: ${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

type Listed = { files: { path: string; version: number }[] };

test('rclone copies a folder up, checks it by MD5, copies again without uploading anything, and copies it down', async ({
  server,
  dir,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const sasUrl = `${link.container_url as string}?${link.sas_token as string}`;
  const up = join(dir, 'up');
  mkdirSync(join(up, 'nested/deeper'), { recursive: true });
  writeFileSync(join(up, 'readme.txt'), 'hello from rclone\n');
  writeFileSync(join(up, 'nested/data.bin'), Buffer.alloc(300_000, 7));
  writeFileSync(join(up, 'nested/deeper/notes.md'), '# notes\n');

  await rclone(sasUrl, 'copy', up, `x:${id}/backup`);
  const listed = async () =>
    ((await (await server.get(`/workspaces/${id}/files`, owner.api_token)).json()) as Listed).files;
  assert.equal(
    (await listed()).map((file) => [file.path, file.version]),
    [
      ['backup/nested/data.bin', 1],
      ['backup/nested/deeper/notes.md', 1],
      ['backup/readme.txt', 1],
    ],
  );

  // `check` compares sizes and MD5s; it fails on a difference, or when a hash is missing.
  const checked = await rclone(sasUrl, 'check', up, `x:${id}/backup`);
  assert.match(checked.stderr, /0 differences found/);
  assert.match(checked.stderr, /3 matching files/);
  assert.not.match(checked.stderr, /hashes could not be checked/);

  const again = await rclone(sasUrl, 'copy', up, `x:${id}/backup`, '-v');
  assert.not.match(again.stderr, /Copied/, 'nothing uploaded again');
  assert.equal(
    (await listed()).map((file) => file.version),
    [1, 1, 1],
    'no new version',
  );
  const receipts = (await (
    await server.get(`/workspaces/${id}/receipts`, owner.api_token)
  ).json()) as { receipts: unknown[] };
  assert.is(receipts.receipts.length, 3, 'no new receipt');

  const down = join(dir, 'down');
  await rclone(sasUrl, 'copy', `x:${id}/backup`, down);
  for (const path of ['readme.txt', 'nested/data.bin', 'nested/deeper/notes.md']) {
    assert.equal(readFileSync(join(down, path)), readFileSync(join(up, path)), path);
  }
});

test.run();
