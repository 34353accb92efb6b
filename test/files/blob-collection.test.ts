import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BLOB_GRACE_MS, collectUnusedBlobs, holdBlob } from '../../actors/files/blob-collector.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { BLOB_LOCK_CLASS } from '../../storage/files/blob-references.ts';
import { sha256 } from '../helpers/digests.ts';
import { sendAs } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { postgresSuite } from '../helpers/storage.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';
import { chunksOf } from '../storage/blobs/sources.ts';

/**
 * Blobs no row uses any more are collected, through a real server: files saved over HTTP, the
 * collector called with the server's services and a chosen `now` (blob times are wall-clock
 * file times, so `now` is the wall clock moved on, not the server's test clock).
 */
const test = suite<{ server: TestServer }>('unused blobs are collected');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

/** A moment when every blob put so far is past its grace. */
const pastTheGrace = () => new Date(Date.now() + BLOB_GRACE_MS + 60_000);

/** A request that must succeed. */
async function send(server: TestServer, method: string, path: string, token: string) {
  const response = await sendAs(server, method, path, token);
  assert.ok(response.status < 300, `${method} ${path}: ${response.status}`);
  return response;
}

async function held(server: TestServer, text: string): Promise<boolean> {
  return (await server.services.files.blobs.stat(sha256(text))) !== null;
}

/** Puts bytes in the blob store with no row using them, as a save does before it commits. */
async function putUnused(server: TestServer, text: string): Promise<string> {
  const blob = await server.services.files.blobs.put(chunksOf(Buffer.from(text)), {
    maxBytes: 1_000,
  });
  return blob.sha256;
}

async function stageBlock(server: TestServer, agentId: string, workspaceId: string, sha: string) {
  const at = new Date();
  await server.services.driver.query(
    `insert into staged_blocks (workspace_id, path, agent_id, block_id, sha256, size, staged_at,
       expires_at) values ($1, 'big.bin', $2, $3, $4, 5, $5, $6)`,
    [workspaceId, agentId, randomUUID(), sha, at, new Date(at.getTime() + BLOB_GRACE_MS)],
  );
}

test("a replaced or deleted file's old bytes leave at once, without the collector; bytes in use are kept", async ({
  server,
}) => {
  // What other tests left is collected first, so the counts below are this test's own.
  const before = await collectUnusedBlobs(server.services, pastTheGrace());
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'report.txt', 'report, first draft');
  await saveFile(server, owner, id, 'report.txt', 'report, final');
  await saveFile(server, owner, id, 'copy.txt', 'shared words');
  await saveFile(server, owner, id, 'other.txt', 'shared words');
  await saveFile(server, owner, id, 'other.txt', 'other words');
  await saveFile(server, owner, id, 'gone.txt', 'soon deleted');
  await send(server, 'DELETE', `/workspaces/${id}/files/gone.txt`, owner.api_token);

  // Rule every_kept_byte (actors/files/quota.ts): bytes let go are deleted by the save or delete,
  // just after its answer.
  await server.services.files.discards.settled();
  assert.not.ok(await held(server, 'report, first draft'));
  assert.not.ok(await held(server, 'soon deleted'));
  const stored = before.examined - before.collected + 3;
  const late = await collectUnusedBlobs(server.services, pastTheGrace());
  assert.equal(late, { examined: stored, collected: 0 }, 'the collector finds nothing left');
  assert.ok(await held(server, 'report, final'));
  assert.ok(await held(server, 'shared words'), 'copy.txt still uses the bytes other.txt left');
  assert.ok(await held(server, 'other words'));
  const read = await send(server, 'GET', `/workspaces/${id}/files/report.txt`, owner.api_token);
  assert.is(await read.text(), 'report, final');
});

test('markdown with a YAML header keeps the bytes of every version', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'deal.md', '---\ndeal: one\n---\nfirst');
  await saveFile(server, owner, id, 'deal.md', '---\ndeal: one\n---\nsecond');
  await collectUnusedBlobs(server.services, pastTheGrace());
  assert.ok(await held(server, '---\ndeal: one\n---\nfirst'));
  assert.ok(await held(server, '---\ndeal: one\n---\nsecond'));
  const first = await send(
    server,
    'GET',
    `/workspaces/${id}/files/deal.md?version=1`,
    owner.api_token,
  );
  assert.is(await first.text(), '---\ndeal: one\n---\nfirst');
});

test('bytes no row uses are kept until the grace since their last put is over', async ({
  server,
}) => {
  const sha = await putUnused(server, 'a save on its way');
  const withinGrace = new Date(Date.now() + BLOB_GRACE_MS - 60_000);
  assert.is((await collectUnusedBlobs(server.services, withinGrace)).collected, 0);
  assert.ok(await held(server, 'a save on its way'));
  const shortGrace = await collectUnusedBlobs(server.services, new Date(Date.now() + 60_000), {
    graceMs: 30_000,
  });
  assert.ok(shortGrace.collected >= 1, 'the grace can be chosen');
  assert.is(await server.services.files.blobs.stat(sha), null);
});

test('bytes a staged block holds are kept; once the block is gone they are collected', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const sha = await putUnused(server, 'block');
  await stageBlock(server, owner.agent_id, id, sha);
  await collectUnusedBlobs(server.services, pastTheGrace());
  assert.ok(await held(server, 'block'));
  await server.services.driver.query('delete from staged_blocks where sha256 = $1', [sha]);
  await collectUnusedBlobs(server.services, pastTheGrace());
  assert.not.ok(await held(server, 'block'));
});

test('holdBlob holds bytes that are there, and refuses with storage_unavailable once collected', async ({
  server,
}) => {
  const { services } = server;
  const sha = await putUnused(server, 'put, then waited too long');
  await services.driver.transaction((tx) => holdBlob(tx, services.files.blobs, sha));
  await collectUnusedBlobs(services, pastTheGrace());
  const error = await services.driver
    .transaction((tx) => holdBlob(tx, services.files.blobs, sha))
    .catch((e: unknown) => e);
  assert.instance(error, ServiceError);
  assert.is((error as ServiceError).code, 'storage_unavailable');
  assert.match((error as ServiceError).message, /nothing was saved/);
});

test('a read whose bytes were collected after it found its version answers 404, not 500', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'gone.txt', 'bytes that go');
  // What a read racing the collector sees: the row still names bytes the store no longer has.
  await server.services.files.blobs.delete(sha256('bytes that go'));
  const response = await fetch(server.url(`/workspaces/${id}/files/gone.txt`), {
    headers: { authorization: `Bearer ${owner.api_token}` },
  });
  assert.is(response.status, 404);
  assert.is(((await response.json()) as { code: string }).code, 'not_found');
});

test.run();

/**
 * On PostgreSQL the collector and a save really run at once: the advisory lock is what makes the
 * collector wait for the save's commit, and then see the row it wrote.
 */
const concurrent = postgresSuite<{ server: TestServer }>(
  'the collector and a save holding the blob, at once',
);

concurrent.before(async (context) => {
  context.server = await startTestServer();
});
concurrent.after(async ({ server }) => {
  await server.close();
});

concurrent(
  'the collector waits for a transaction that holds the blob, then keeps it',
  async ({ server }) => {
    const { services } = server;
    const owner = await server.signUp();
    const id = await newWorkspace(server, owner);
    const sha = await putUnused(server, 'bytes a save is about to use');

    let holding!: () => void;
    const isHolding = new Promise<void>((resolve) => (holding = resolve));
    let commit!: () => void;
    const mayCommit = new Promise<void>((resolve) => (commit = resolve));
    const saving = services.driver.transaction(async (tx) => {
      await holdBlob(tx, services.files.blobs, sha);
      await tx.query(
        `insert into staged_blocks (workspace_id, path, agent_id, block_id, sha256, size,
         staged_at, expires_at) values ($1, 'big.bin', $2, 'b1', $3, 5, now(), now())`,
        [id, owner.agent_id, sha],
      );
      holding();
      await mayCommit;
    });
    await isHolding;

    let done = false;
    const collecting = collectUnusedBlobs(services, pastTheGrace()).finally(() => (done = true));
    // Until the collector waits on the blob's lock (or, were it not to take it, finishes).
    for (;;) {
      const [waiting] = await services.driver.query<{ n: number }>(
        `select count(*)::int4 as n from pg_locks
       where locktype = 'advisory' and classid = $1 and objsubid = 2 and not granted`,
        [BLOB_LOCK_CLASS],
      );
      if (done || (waiting?.n ?? 0) > 0) break;
    }
    commit();
    await saving;
    // Examined: that blob and the store's identity blob (actors/files/blob-store-identity.ts).
    assert.equal(await collecting, { examined: 2, collected: 0 });
    assert.ok(await held(server, 'bytes a save is about to use'));
  },
);

concurrent.run();
