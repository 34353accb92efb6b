import { createHash } from 'node:crypto';
import {
  BlockBlobClient,
  ContainerClient,
  RestError,
  type StoragePipelineOptions,
} from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { md5Base64 } from '../helpers/digests.ts';
import {
  blockId,
  expectRefusal,
  fileLink,
  holdings,
  putBlob,
  putBlock,
  refusedAndNothingStored,
  sendToLink,
  stagedBlockCount,
  storageLink,
  storageLinkSuite,
} from '../helpers/storage-links.ts';
import { newChanges, ofType } from '../helpers/changes.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * Content-MD5 and x-ms-meta-* metadata through storage links and the REST file routes, with the
 * Node Azure SDK: a wrong MD5 stores nothing; the MD5 of every version and the metadata sent
 * with it are kept and read back by Get Blob, Get Blob Properties and List Blobs.
 */
const test = storageLinkSuite('storage links keep Content-MD5 and metadata');

// No retries: a refusal is seen at once, not after the SDK's back-off.
const NO_RETRY: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

const md5 = (bytes: Uint8Array | string) => createHash('md5').update(bytes).digest();

async function refusal(call: Promise<unknown>): Promise<RestError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof RestError) return error;
    throw error;
  }
  throw new Error('the call was not refused');
}

test('an upload whose transactional Content-MD5 is wrong is refused 400 Md5Mismatch and the file stays as it was', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const blob = new BlockBlobClient(
    await fileLink(server, owner, id, 'kept.txt'),
    undefined,
    NO_RETRY,
  );
  await blob.upload('first', 5);
  const before = await holdings(server, owner, [id]);
  const wrong = await refusal(
    blob.upload('second', 6, { transactionalContentMD5: md5('something else') }),
  );
  assert.is(wrong.statusCode, 400);
  assert.is(wrong.code, 'Md5Mismatch');
  assert.equal(await holdings(server, owner, [id]), before, 'no version, receipt or bytes used');
  assert.is((await blob.downloadToBuffer()).toString(), 'first', 'the previous content intact');
  const changes = await newChanges(server, owner);
  assert.is(ofType(changes, 'file.saved').length, 1, 'no file.saved but the first');
  const right = await blob.upload('second', 6, { transactionalContentMD5: md5('second') });
  assert.is(right._response.status, 201, 'the right MD5 saves');
});

test('Put Blob, Put Block and Put Block List refuse a wrong MD5 and store nothing; a bad one is refused too', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'parts.bin');
  const refused = (request: () => ReturnType<typeof sendToLink>, what: string) =>
    refusedAndNothingStored(server, owner, [id], request, 400, 'Md5Mismatch', what);
  await refused(
    () =>
      sendToLink(link, {
        method: 'PUT',
        headers: { 'x-ms-blob-type': 'BlockBlob', 'content-md5': md5Base64('other') },
        body: 'bytes',
      }),
    'Put Blob, Content-MD5',
  );
  await refused(
    () =>
      sendToLink(link, {
        method: 'PUT',
        headers: { 'x-ms-blob-type': 'BlockBlob', 'x-ms-blob-content-md5': md5Base64('other') },
        body: 'bytes',
      }),
    'Put Blob, x-ms-blob-content-md5',
  );
  await refused(
    () =>
      sendToLink(link, {
        method: 'PUT',
        headers: { 'x-ms-blob-type': 'BlockBlob', 'content-md5': 'not base64 at all' },
        body: 'bytes',
      }),
    'Put Blob, an MD5 that is not one',
  );
  await refused(
    () =>
      sendToLink(`${link}&comp=block&blockid=${encodeURIComponent(blockId(1))}`, {
        method: 'PUT',
        headers: { 'content-md5': md5Base64('other') },
        body: 'part one',
      }),
    'Put Block',
  );
  assert.is((await putBlock(link, blockId(1), 'part one')).response.status, 201);
  await refused(
    () =>
      sendToLink(`${link}&comp=blocklist`, {
        method: 'PUT',
        headers: { 'x-ms-blob-content-md5': md5Base64('other') },
        body: `<BlockList><Latest>${blockId(1)}</Latest></BlockList>`,
      }),
    'Put Block List with a stated MD5 that is not the whole',
  );
  assert.is(await stagedBlockCount(server), 1, 'the staged block waits for a good commit');
});

test('the MD5 of every save is kept and served: Get Blob, Get Blob Properties, List Blobs and REST read_file', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const body = 'no MD5 was sent with these bytes';
  const sent = await putBlob(await fileLink(server, owner, id, 'plain.txt'), body);
  assert.is(sent.response.status, 201);
  const link = await storageLink(server, owner, id, 'read');
  const container = new ContainerClient(
    `${link.container_url as string}?${link.sas_token as string}`,
    undefined,
    NO_RETRY,
  );
  const blob = container.getBlobClient('plain.txt');
  const properties = await blob.getProperties();
  assert.equal(Buffer.from(properties.contentMD5 as Uint8Array), md5(body), 'HEAD');
  const download = await blob.download();
  assert.equal(Buffer.from(download.contentMD5 as Uint8Array), md5(body), 'GET');
  assert.equal(Buffer.from(download.blobContentMD5 as Uint8Array), md5(body), 'GET, the blob');
  const listed = [];
  for await (const item of container.listBlobsFlat()) listed.push(item);
  assert.equal(Buffer.from(listed[0]?.properties.contentMD5 as Uint8Array), md5(body), 'listed');
  const ranged = await sendToLink(blob.url, { headers: { range: 'bytes=0-1' } });
  assert.is(ranged.response.status, 206);
  assert.is(ranged.response.headers.get('content-md5'), null, 'a part is not the whole');
  assert.is(ranged.response.headers.get('x-ms-blob-content-md5'), md5Base64(body));
  const read = await server.get(`/workspaces/${id}/files/plain.txt`, owner.api_token);
  assert.is(read.status, 200);
  assert.is(read.headers.get('content-md5'), md5Base64(body), 'REST read_file');
});

test('metadata sent with an upload comes back on Get Blob Properties, Get Blob and List Blobs with include=metadata', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const container = new ContainerClient(
    `${link.container_url as string}?${link.sas_token as string}`,
    undefined,
    NO_RETRY,
  );
  const body = Buffer.from('a file with metadata & an MD5');
  const blob = container.getBlockBlobClient('docs/with-metadata.txt');
  await blob.upload(body, body.length, {
    blobHTTPHeaders: { blobContentMD5: md5(body) },
    metadata: { mtime: '2026-01-02T03:04:05.000000000Z', note: 'plain <ok> & "quoted"' },
  });
  const properties = await blob.getProperties();
  assert.equal(properties.metadata, {
    mtime: '2026-01-02T03:04:05.000000000Z',
    note: 'plain <ok> & "quoted"',
  });
  assert.equal(Buffer.from(properties.contentMD5 as Uint8Array), md5(body));
  assert.equal((await blob.download()).metadata, properties.metadata, 'Get Blob');
  const listed = [];
  for await (const item of container.listBlobsFlat({ includeMetadata: true })) listed.push(item);
  assert.is(listed.length, 1);
  assert.equal(listed[0]?.metadata, properties.metadata, 'List Blobs with include=metadata');
  const plain = [];
  for await (const item of container.listBlobsFlat()) plain.push(item);
  assert.is(plain[0]?.metadata, undefined, 'no metadata unless asked for');

  // A new version keeps its own metadata; Set Blob Metadata replaces the current one's in place.
  await blob.upload('v2', 2, { metadata: { mtime: 'second' } });
  assert.equal((await blob.getProperties()).metadata, { mtime: 'second' });
  const before = await holdings(server, owner, [id]);
  await blob.setMetadata({ mtime: 'third' });
  assert.equal((await blob.getProperties()).metadata, { mtime: 'third' });
  // The metadata kept counts with the version's bytes (rule every_kept_byte): as it now is.
  const counted = (m: object) => Buffer.byteLength(JSON.stringify(m));
  assert.equal(
    await holdings(server, owner, [id]),
    {
      ...before,
      usedBytes: before.usedBytes - counted({ mtime: 'second' }) + counted({ mtime: 'third' }),
    },
    'no new version or receipt',
  );
});

test('metadata past 8 KiB is refused 400 MetadataTooLarge, a name that is not an identifier 400 InvalidMetadata; nothing stored', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'meta.txt');
  const put = (headers: Record<string, string>) => () =>
    sendToLink(link, {
      method: 'PUT',
      headers: { 'x-ms-blob-type': 'BlockBlob', ...headers },
      body: 'x',
    });
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    put({ 'x-ms-meta-big': 'v'.repeat(4096), 'x-ms-meta-bigger': 'v'.repeat(4096) }),
    400,
    'MetadataTooLarge',
  );
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    put({ 'x-ms-meta-1st': 'digit first' }),
    400,
    'InvalidMetadata',
  );
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    put({ 'x-ms-meta-has-dash': 'dash' }),
    400,
    'InvalidMetadata',
  );
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      sendToLink(`${link}&comp=blocklist`, {
        method: 'PUT',
        headers: { 'x-ms-meta-a-b': 'x' },
        body: '<BlockList></BlockList>',
      }),
    400,
    'InvalidMetadata',
    'Put Block List',
  );
  const justUnder = await sendToLink(link, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob', 'x-ms-meta-n': 'v'.repeat(8 * 1024 - 1) },
    body: 'x',
  });
  assert.is(justUnder.response.status, 201, 'exactly 8 KiB is kept');
  await expectRefusal(
    await sendToLink(`${link}&comp=metadata`, {
      method: 'PUT',
      headers: { 'x-ms-meta-n': 'v'.repeat(8 * 1024) },
    }),
    400,
    'MetadataTooLarge',
    'Set Blob Metadata',
  );
});

test('REST PUT with a wrong Content-MD5 answers 400 content_md5_mismatch and saves nothing; the right one saves', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const put = (body: string, contentMd5: string) =>
    fetch(server.url(`/workspaces/${id}/files/notes/a.txt`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${owner.api_token}`, 'content-md5': contentMd5 },
      body,
    });
  const before = await holdings(server, owner, [id]);
  const wrong = await put('hello', md5Base64('hullo'));
  assert.is(wrong.status, 400);
  assert.is(wrong.headers.get('content-type'), 'application/problem+json');
  const problem = (await wrong.json()) as { code: string; content_md5_computed: string };
  assert.is(problem.code, 'content_md5_mismatch');
  assert.is(problem.content_md5_computed, md5Base64('hello'));
  assert.equal(await holdings(server, owner, [id]), before, 'nothing saved');
  const right = await put('hello', md5Base64('hello'));
  assert.is(right.status, 201);
  const read = await server.get(`/workspaces/${id}/files/notes/a.txt`, owner.api_token);
  assert.is(read.headers.get('content-md5'), md5Base64('hello'));
});

test.run();
