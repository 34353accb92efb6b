import { createHash } from 'node:crypto';
import * as assert from 'uvu/assert';
import { startTestServer } from '../helpers/server.ts';
import {
  blockId,
  expectRefusal,
  fileLink,
  holdings,
  KiB,
  MiB,
  putBlob,
  putBlock,
  QUOTA,
  refusedAndNothingStored,
  sendToLink,
  storageLinkSuite,
  usedBytes,
  type Sent,
} from '../helpers/storage-links.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * Uploads through storage links hold to the agent's storage quota, in one shot, streamed, in
 * staged blocks and racing each other: past it they answer 507 QuotaExceeded and store nothing.
 */
const test = storageLinkSuite('storage link uploads hold to the quota');

test('Put Blob past what is left of the quota answers 507 QuotaExceeded and stores nothing; up to it saves', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const first = await putBlob(
    await fileLink(server, owner, id, 'first.bin'),
    Buffer.alloc(600 * KiB),
  );
  assert.is(first.response.status, 201);
  const link = await fileLink(server, owner, id, 'second.bin');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(link, Buffer.alloc(600 * KiB)),
    507,
    'QuotaExceeded',
  );
  const exactly = await putBlob(link, Buffer.alloc(QUOTA - 600 * KiB));
  assert.is(exactly.response.status, 201, 'up to exactly the quota saves');
  assert.is(await usedBytes(server, owner), QUOTA);
});

test('Put Blob larger than the whole quota answers 507 QuotaExceeded, declared or streamed', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'too-big.bin');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(link, Buffer.alloc(QUOTA + 1)),
    507,
    'QuotaExceeded',
    'with Content-Length',
  );
  async function* overQuota() {
    yield new Uint8Array(QUOTA);
    yield new Uint8Array(1);
  }
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      sendToLink(link, {
        method: 'PUT',
        headers: { 'x-ms-blob-type': 'BlockBlob' },
        body: overQuota() as unknown as BodyInit,
        duplex: 'half',
      } as RequestInit),
    507,
    'QuotaExceeded',
    'streamed without Content-Length',
  );
});

test('staged blocks count against the quota: staging past it answers 507 QuotaExceeded', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'staged.bin');
  const first = await putBlock(link, blockId(1), Buffer.alloc(700 * KiB));
  assert.is(first.response.status, 201);
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlock(link, blockId(2), Buffer.alloc(400 * KiB)),
    507,
    'QuotaExceeded',
  );
  const other = await fileLink(server, owner, id, 'elsewhere.bin');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlock(other, blockId(1), Buffer.alloc(400 * KiB)),
    507,
    'QuotaExceeded',
    'staging for another path',
  );
  async function* streamed() {
    yield new Uint8Array(200 * KiB);
    yield new Uint8Array(200 * KiB);
  }
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      sendToLink(`${link}&comp=block&blockid=${encodeURIComponent(blockId(3))}`, {
        method: 'PUT',
        body: streamed() as unknown as BodyInit,
        duplex: 'half',
      } as RequestInit),
    507,
    'QuotaExceeded',
    'staging a block streamed without Content-Length',
  );
  const replaced = await putBlock(link, blockId(1), Buffer.alloc(900 * KiB));
  assert.is(replaced.response.status, 201, 'restaging a block counts it once');
  // The staged 900 KiB hold room from plain saves too, until committed or expired.
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(other, Buffer.alloc(200 * KiB)),
    507,
    'QuotaExceeded',
    'a Put Blob while staged blocks hold the room',
  );
});

test('of two concurrent Put Blobs that each fit the quota alone but not together, exactly one saves', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const links = [
    await fileLink(server, owner, id, 'one.bin'),
    await fileLink(server, owner, id, 'two.bin'),
  ];
  const answers = await Promise.all(links.map((link) => putBlob(link, Buffer.alloc(600 * KiB))));
  const statuses = answers.map((sent) => sent.response.status).sort();
  assert.equal(statuses, [201, 507]);
  const refused = answers.find((sent) => sent.response.status === 507) as Sent;
  await expectRefusal(refused, 507, 'QuotaExceeded');
  const held = await holdings(server, owner, [id]);
  assert.is(held.usedBytes, 600 * KiB);
  const [files] = held.workspaces as {
    files: { files: unknown[] };
    receipts: { receipts: unknown[] };
  }[];
  assert.is(files?.files.files.length, 1);
  assert.is(files?.receipts.receipts.length, 1);
});

test('a link upload larger than 100 MiB is saved when the quota allows', async () => {
  const size = 101 * MiB;
  const server = await startTestServer({ storageQuotaBytes: 120 * MiB });
  try {
    const owner = await server.signUp();
    const id = await newWorkspace(server, owner);
    const link = await fileLink(server, owner, id, 'large.bin');
    const chunk = Buffer.alloc(MiB);
    const hash = createHash('sha256');
    // Generated as it is sent: one MiB at a time, never the whole body in memory.
    async function* body() {
      for (let offset = 0; offset < size; offset += chunk.length) {
        chunk.fill(offset / MiB);
        hash.update(chunk);
        yield new Uint8Array(chunk);
      }
    }
    const response = await fetch(link, {
      method: 'PUT',
      headers: { 'x-ms-blob-type': 'BlockBlob' },
      body: body() as unknown as BodyInit,
      duplex: 'half',
    } as RequestInit);
    assert.is(response.status, 201, await response.text());
    assert.is(response.headers.get('etag'), `"${hash.digest('hex')}"`);
    assert.is(await usedBytes(server, owner), size);
    const head = await fetch(link, { method: 'HEAD' });
    assert.is(head.headers.get('content-length'), String(size));
  } finally {
    await server.close();
  }
});

test.run();
