import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkBlobStoreIdentity } from '../../actors/files/blob-store-identity.ts';
import { isBlobReferenced } from '../../storage/files/blob-references.ts';
import { recordedBlobStoreIdentity } from '../../storage/files/blob-store-identity.ts';
import { openFilesystemBlobStore } from '../../storage/blobs/filesystem-store.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import {
  driverKinds,
  freshDatabaseUrl,
  openTestDriver,
  postgresSuite,
} from '../helpers/storage.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * A misconfiguration is refused, not discovered: processes on one database must share one blob
 * store, or files saved through one answer 404 through another. The database records the store
 * it was first used with (an identity blob); a process on another store refuses to start.
 */
const test = suite('the blob store carries an identity its database records');

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the first start records its store; the same store passes again, another is refused with a clear message', async () => {
  for (const kind of driverKinds()) {
    const driver = await openTestDriver(kind);
    try {
      const mine = await openFilesystemBlobStore({ root: tempDir('identity-mine-') });
      await checkBlobStoreIdentity(driver, mine, 'mine');
      const recorded = await recordedBlobStoreIdentity(driver);
      assert.ok(recorded, `${kind}: an identity is recorded`);
      assert.ok(await mine.stat(recorded), `${kind}: its blob is in the store`);

      await checkBlobStoreIdentity(driver, mine, 'mine');
      assert.is(await recordedBlobStoreIdentity(driver), recorded, `${kind}: it stays the same`);

      const other = await openFilesystemBlobStore({ root: tempDir('identity-other-') });
      const refusal = await checkBlobStoreIdentity(driver, other, '/srv/other/blobs').catch(
        (error: unknown) => error,
      );
      assert.instance(refusal, Error, `${kind}: another store is refused`);
      const message = (refusal as Error).message;
      assert.match(message, '/srv/other/blobs');
      assert.match(message, 'not the one this database was first used with');
      assert.match(message, 'share one blob store');
      assert.is(
        await recordedBlobStoreIdentity(driver),
        recorded,
        `${kind}: nothing recorded anew`,
      );
    } finally {
      await driver.close();
    }
  }
});

test('the collector of unused blobs spares the identity blob', async () => {
  for (const kind of driverKinds()) {
    const driver = await openTestDriver(kind);
    try {
      const store = await openFilesystemBlobStore({ root: tempDir('identity-kept-') });
      await checkBlobStoreIdentity(driver, store, 'store');
      const recorded = (await recordedBlobStoreIdentity(driver)) as string;
      assert.ok(await isBlobReferenced(driver, recorded), `${kind}: the identity counts as used`);
    } finally {
      await driver.close();
    }
  }
});

test('processes starting at once on a new database agree on one identity', async () => {
  for (const kind of driverKinds()) {
    const driver = await openTestDriver(kind);
    try {
      const store = await openFilesystemBlobStore({ root: tempDir('identity-race-') });
      await Promise.all(
        Array.from({ length: 4 }, () => checkBlobStoreIdentity(driver, store, 'store')),
      );
      const recorded = (await recordedBlobStoreIdentity(driver)) as string;
      assert.ok(await store.stat(recorded), `${kind}: the recorded one is in the store`);
    } finally {
      await driver.close();
    }
  }
});

test.run();

/** Two servers on one PostgreSQL: a second machine with a DATA_DIR of its own is refused. */
const servers = postgresSuite<{ started: TestServer[] }>(
  'a server on another blob store than its database refuses to start',
);

servers.before((context) => {
  context.started = [];
});
servers.after(async ({ started }) => {
  for (const server of started) await server.close();
});

servers(
  'a second server with its own DATA_DIR refuses to start; one sharing the store serves the files',
  async ({ started }) => {
    const databaseUrl = await freshDatabaseUrl();
    const shared = tempDir('identity-shared-');
    const a = await startTestServer({ databaseUrl, dataDir: shared });
    started.push(a);
    const agent = await a.signUp();
    const workspaceId = await newWorkspace(a, agent);
    await saveFile(a, agent, workspaceId, 'notes.txt', 'kept where both can read it');

    const refusal = await startTestServer({ databaseUrl, dataDir: tempDir('identity-own-') }).catch(
      (error: unknown) => error,
    );
    assert.instance(refusal, Error, 'the server on its own store does not start');
    assert.match((refusal as Error).message, 'not the one this database was first used with');

    const b = await startTestServer({ databaseUrl, dataDir: shared });
    started.push(b);
    const file = await b.get(`/workspaces/${workspaceId}/files/notes.txt`, agent.api_token);
    assert.is(file.status, 200);
    assert.is(await file.text(), 'kept where both can read it');
  },
);

servers.run();
