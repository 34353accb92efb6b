import { BlobClient, BlockBlobClient, type RestError } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import type { TestServer } from '../helpers/server.ts';
import {
  blockId,
  blockListXml,
  fileLink,
  holdings,
  putBlock,
  refusedAndNothingStored,
  restError,
  sdkOptions,
  sendToLink,
  stagedBlockCount,
  storageLink,
  storageLinkSuite,
} from '../helpers/storage-links.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Copies from a URL through a storage link: Azure clients name the source in
 * `x-ms-copy-source` and send no body, so a copy served as a plain Put would save an empty file
 * over the old one. Storage links do not copy: each such call is refused 409
 * FeatureNotSupported, and the file, its versions, its receipts, the storage used and the
 * staged blocks stay exactly as they were. The source is a read link of this same service, so a
 * real copy would have been possible.
 */
const test = storageLinkSuite('storage links refuse copies from a URL and change nothing');

const OLD_CONTENT = 'the bytes saved before the copy was asked for';
const SOURCE_CONTENT = 'the bytes of the copy source';

interface Scene {
  owner: Agent;
  workspaceId: string;
  /** A readwrite link to target.txt, which holds OLD_CONTENT. */
  targetUrl: string;
  /** A read link to source.txt, which holds SOURCE_CONTENT. */
  sourceUrl: string;
}

async function scene(server: TestServer): Promise<Scene> {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await saveFile(server, owner, workspaceId, 'target.txt', OLD_CONTENT);
  await saveFile(server, owner, workspaceId, 'source.txt', SOURCE_CONTENT);
  const targetUrl = await fileLink(server, owner, workspaceId, 'target.txt');
  const sourceUrl = (await storageLink(server, owner, workspaceId, 'read', 'source.txt'))
    .file_url as string;
  return { owner, workspaceId, targetUrl, sourceUrl };
}

/** The target's bytes as the REST API serves them. */
async function targetBytes(server: TestServer, { owner, workspaceId }: Scene): Promise<string> {
  const response = await server.get(`/workspaces/${workspaceId}/files/target.txt`, owner.api_token);
  assert.is(response.status, 200);
  return response.text();
}

/**
 * Runs an SDK copy call and checks that it was refused FeatureNotSupported after sending
 * x-ms-copy-source, and that nothing changed: the target's bytes, the files with their versions,
 * the receipts, the storage used, and the staged blocks.
 */
async function refusedUnchanged(
  server: TestServer,
  at: Scene,
  call: () => Promise<unknown>,
  what: string,
): Promise<RestError> {
  const before = await holdings(server, at.owner, [at.workspaceId]);
  const staged = await stagedBlockCount(server);
  const refused = await restError(call()).catch(async (error: unknown) => {
    const now = await targetBytes(server, at);
    assert.unreachable(`${what} was served, not refused; target.txt now holds ${now.length} bytes`);
    throw error;
  });
  assert.is(refused.statusCode, 409, `${what}: status`);
  assert.is(refused.code, 'FeatureNotSupported', `${what}: code`);
  assert.is(refused.request?.headers.get('x-ms-copy-source'), at.sourceUrl, `${what}: a copy`);
  assert.match(refused.message, /download/, `${what}: says what to do instead`);
  assert.is(await targetBytes(server, at), OLD_CONTENT, `${what}: the old bytes`);
  assert.equal(await holdings(server, at.owner, [at.workspaceId]), before, `${what}: unchanged`);
  assert.is(await stagedBlockCount(server), staged, `${what}: no block staged`);
  return refused;
}

test('syncUploadFromURL onto an existing file is refused FeatureNotSupported and keeps its bytes, version and receipts', async ({
  server,
}) => {
  const at = await scene(server);
  const client = new BlockBlobClient(at.targetUrl, undefined, sdkOptions);
  const refused = await refusedUnchanged(
    server,
    at,
    () => client.syncUploadFromURL(at.sourceUrl),
    'Put Blob From URL',
  );
  assert.match(refused.message, /Put Blob From URL/);
});

test('stageBlockFromURL is refused FeatureNotSupported and stages no block', async ({ server }) => {
  const at = await scene(server);
  const client = new BlockBlobClient(at.targetUrl, undefined, sdkOptions);
  const refused = await refusedUnchanged(
    server,
    at,
    () => client.stageBlockFromURL(blockId(1), at.sourceUrl),
    'Put Block From URL',
  );
  assert.match(refused.message, /Put Block From URL/);
  const blocks = await restError(client.commitBlockList([blockId(1)]));
  assert.is(blocks.code, 'InvalidBlockList', 'the block was never staged');
  assert.is(await targetBytes(server, at), OLD_CONTENT);
});

test('beginCopyFromURL (Copy Blob) is refused FeatureNotSupported and the file stays as it was', async ({
  server,
}) => {
  const at = await scene(server);
  const client = new BlobClient(at.targetUrl, undefined, sdkOptions);
  const refused = await refusedUnchanged(
    server,
    at,
    async () => (await client.beginCopyFromURL(at.sourceUrl)).pollUntilDone(),
    'Copy Blob',
  );
  assert.match(refused.message, /Copy Blob\)/);
});

test('syncCopyFromURL (Copy Blob From URL) is refused FeatureNotSupported and the file stays as it was', async ({
  server,
}) => {
  const at = await scene(server);
  const client = new BlobClient(at.targetUrl, undefined, sdkOptions);
  const refused = await refusedUnchanged(
    server,
    at,
    () => client.syncCopyFromURL(at.sourceUrl),
    'Copy Blob From URL',
  );
  assert.match(refused.message, /Copy Blob From URL/);
});

test('a Put Block List carrying x-ms-copy-source is refused too and commits nothing of what was staged', async ({
  server,
}) => {
  const at = await scene(server);
  const staged = await putBlock(at.targetUrl, blockId(1), 'new bytes');
  assert.is(staged.response.status, 201);
  await refusedAndNothingStored(
    server,
    at.owner,
    [at.workspaceId],
    () =>
      sendToLink(`${at.targetUrl}&comp=blocklist`, {
        method: 'PUT',
        headers: { 'x-ms-copy-source': at.sourceUrl },
        body: blockListXml([blockId(1)]),
      }),
    409,
    'FeatureNotSupported',
    'Put Block List with x-ms-copy-source',
  );
  assert.is(await targetBytes(server, at), OLD_CONTENT);
});

test.run();
