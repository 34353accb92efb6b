import * as assert from 'uvu/assert';
import {
  blockId,
  blockListXml,
  fileLink,
  MiB,
  putBlob,
  putBlock,
  putBlockList,
  rawSend,
  refusedAndNothingStored,
  sendToLink,
  storageLinkSuite,
} from '../helpers/storage-links.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * Storage link requests that Azure's protocol refuses: a missing or wrong blob type, a block
 * list naming blocks never staged or not XML, a block larger than Azure takes. Each answers the
 * XML error an Azure client acts on, and stores nothing.
 */
const test = storageLinkSuite('storage links refuse malformed requests and store nothing');

test('Put Blob without x-ms-blob-type answers 400 MissingRequiredHeader, and an AppendBlob 400 InvalidHeaderValue', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'typed.txt');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => sendToLink(link, { method: 'PUT', body: 'no type' }),
    400,
    'MissingRequiredHeader',
  );
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(link, 'append', 'AppendBlob'),
    400,
    'InvalidHeaderValue',
  );
});

test('Put Block List naming a block never staged answers 400 InvalidBlockList, and malformed XML 400 InvalidXmlDocument', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'listed.txt');
  const staged = await putBlock(link, blockId(1), 'first');
  assert.is(staged.response.status, 201);
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlockList(link, blockListXml([blockId(1), blockId(2)])),
    400,
    'InvalidBlockList',
  );
  for (const xml of [
    `<BlockList><Latest>${blockId(1)}</Latest>`,
    `<BlockList><Latest>${blockId(1)}</Latest><Oops/></BlockList>`,
    'not xml at all',
  ]) {
    await refusedAndNothingStored(
      server,
      owner,
      [id],
      () => putBlockList(link, xml),
      400,
      'InvalidXmlDocument',
      xml,
    );
  }
  const committed = await putBlockList(link, blockListXml([blockId(1)]));
  assert.is(committed.response.status, 201, 'the staged block alone commits');
});

test('Put Block declaring more than 100 MiB answers 413 RequestBodyTooLarge before a byte is read', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = new URL(await fileLink(server, owner, id, 'huge.bin'));
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      rawSend(
        server,
        'PUT',
        `${link.pathname}${link.search}&comp=block&blockid=${encodeURIComponent(blockId(1))}`,
        {
          headers: { 'content-length': String(100 * MiB + 1) },
        },
      ),
    413,
    'RequestBodyTooLarge',
  );
});

test.run();
