import { execFileSync } from 'node:child_process';
import { closeSync, cpSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startService, type RunningService } from '../../server/app.ts';
import type { Driver } from '../../storage/driver.ts';
import { openPglite } from '../../storage/pglite/driver.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { testConfig } from '../helpers/server.ts';
import { freshPgliteDir } from '../helpers/storage.ts';

/**
 * Issue 32 §5: a full disk under the embedded database (PGlite) and the file blobs answers
 * 507 `storage_full` with Retry-After, never 500; nothing acknowledged is lost; and the service
 * takes writes again once there is room. A real full disk: a small tmpfs (mounting one needs
 * root; elsewhere the suite says so and does not run).
 */
interface Context {
  mount: string;
  driver: Driver;
  service: RunningService;
  filler: string;
}

const test = suite<Context>('a full disk under the embedded database');

function mountTmpfs(megabytes: number): string | null {
  const mount = mkdtempSync(join(tmpdir(), 'agent-service-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', mount], {
      stdio: 'ignore',
    });
  } catch {
    rmSync(mount, { recursive: true, force: true });
    return null;
  }
  onTestsEnd(async () => {
    execFileSync('umount', ['-l', mount], { stdio: 'ignore' });
    rmSync(mount, { recursive: true, force: true });
  });
  return mount;
}

/** Writes zeros to `path` until the disk refuses more. */
function fillDisk(path: string): void {
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

const mount = mountTmpfs(96);
if (!mount) {
  process.stdout.write('faults-disk-full: cannot mount a tmpfs here (needs root): not run\n');
  test.run = () => undefined;
}

test.before(async (context) => {
  context.mount = mount as string;
  const dataDir = join(context.mount, 'data');
  mkdirSync(dataDir);
  cpSync(await freshPgliteDir(), join(dataDir, 'pglite'), { recursive: true });
  const driver = await openPglite(join(dataDir, 'pglite'));
  context.driver = driver;
  context.service = await startService(testConfig(dataDir), driver);
  context.filler = join(context.mount, 'filler');
});
test.after(async ({ service }) => {
  await service.close();
});

test('writes on a full disk answer 507 storage_full with Retry-After; after room returns they work, and nothing acknowledged is lost', async ({
  service,
  filler,
  driver,
}) => {
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${service.baseUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify(body),
    });
  const agent = (await (await post('/agents', { name: 'disk filler' })).json()) as {
    api_token: string;
  };
  const acknowledged: string[] = [];
  fillDisk(filler);
  // The database's buffers take a few writes before a file must grow: write until refused.
  let refused: Response | null = null;
  for (let i = 0; i < 2000 && !refused; i++) {
    const message = `note ${i} ${'x'.repeat(4000)}`;
    const response = await post('/feedback', { message, category: 'other' }, agent.api_token);
    if (response.ok) acknowledged.push(message);
    else refused = response;
    await response.body?.cancel().catch(() => undefined);
  }
  assert.ok(refused, 'a write is refused once the disk is full');
  assert.is(refused.status, 507, `not ${refused.status}`);
  assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After says when');
  const again = await post(
    '/feedback',
    { message: 'while full', category: 'other' },
    agent.api_token,
  );
  const problem = (await again.json()) as { code: string };
  assert.is(problem.code, 'storage_full');

  rmSync(filler);
  const after = await post(
    '/feedback',
    { message: 'room again', category: 'other' },
    agent.api_token,
  );
  assert.is(after.status, 202, 'writes work again once there is room');
  const stored = await driver.query<{ message: string }>('select message from feedback');
  assert.equal(
    stored.map((row) => row.message).sort(),
    [...acknowledged, 'room again'].sort(),
    'every acknowledged write is there, once, and no refused one',
  );
});

test.run();
