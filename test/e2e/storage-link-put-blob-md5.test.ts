import { createHash } from 'node:crypto';
import { BlockBlobClient } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { md5Base64 } from '../helpers/digests.ts';
import {
  blockId,
  blockListXml,
  fileLink,
  putBlob,
  putBlock,
  putBlockList,
  sdkOptions,
  storageLinkSuite,
} from '../helpers/storage-links.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * Put Blob answers, as Azure does, the MD5 the service computed of the bytes it stored
 * (`Content-MD5`), whether or not the client stated one, so a client can check what arrived
 * (the Azure CLI prints it as the upload's `content_md5`). Put Block List does not: Azure's
 * names the block list, not the blob.
 */
const test = storageLinkSuite('Put Blob answers its Content-MD5');

test('Put Blob answers the MD5 of the bytes stored, stated or not', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const url = await fileLink(server, owner, id, 'notes/a.txt');
  const { response } = await putBlob(url, 'unstated md5\n');
  assert.is(response.status, 201);
  assert.is(response.headers.get('content-md5'), md5Base64('unstated md5\n'));

  const sdk = new BlockBlobClient(url, undefined, sdkOptions);
  const uploaded = await sdk.upload('through the SDK', 15, {
    transactionalContentMD5: createHash('md5').update('through the SDK').digest(),
  });
  assert.equal(
    Buffer.from(uploaded.contentMD5 as Uint8Array).toString('base64'),
    md5Base64('through the SDK'),
  );
});

test('Put Block List answers no Content-MD5', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const url = await fileLink(server, owner, id, 'blocks.bin');
  assert.is((await putBlock(url, blockId(0), 'one block')).response.status, 201);
  const { response } = await putBlockList(url, blockListXml([blockId(0)]));
  assert.is(response.status, 201);
  assert.is(response.headers.get('content-md5'), null);
});

test.run();
