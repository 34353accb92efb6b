import { BlockBlobClient, ContainerClient, type StoragePipelineOptions } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import {
  blockId,
  holdings,
  sendToLink,
  expectRefusal,
  storageLink,
  storageLinkSuite,
  fileLink,
} from '../helpers/storage-links.ts';
import type { TestServer } from '../helpers/server.ts';
import type { TestClock } from '../helpers/clock.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * `Last-Modified` and the date conditions through storage links, with the Azure SDK for
 * JavaScript (`conditions: { ifModifiedSince, ifUnmodifiedSince }`): Get Blob and Get Blob
 * Properties send the version's saved_at to the second, a read answers 304 or 412 by it, and a
 * write whose condition does not hold answers 412 ConditionNotMet and changes nothing.
 */
const test = storageLinkSuite('Last-Modified and date conditions on storage links');

// No retries: a refusal is seen at once, not after the SDK's back-off.
const NO_RETRY: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

/** The status and Azure code an SDK call was refused with. */
async function refusal(call: Promise<unknown>): Promise<[number, string | undefined]> {
  try {
    await call;
  } catch (error) {
    // A HEAD has no body: the SDK reads the code from x-ms-error-code into `details`.
    const { statusCode, code, details } = error as {
      statusCode: number;
      code?: string;
      details?: { errorCode?: string };
    };
    return [statusCode, code ?? details?.errorCode];
  }
  throw new Error('the call was not refused');
}

/** A workspace with `data.txt` saved at half past a second, and a file link to it. */
async function savedBlob(server: TestServer, clock: TestClock) {
  const agent = (await server.signUp()) as Agent;
  const id = await newWorkspace(server, agent);
  clock.advance(1500 - (clock.now() % 1000));
  const receipt = await saveFile(server, agent, id, 'data.txt', 'first bytes');
  const savedAt = new Date(String(receipt.saved_at));
  // Last-Modified is the second the save fell in.
  const lastModified = new Date(Math.floor(savedAt.getTime() / 1000) * 1000);
  const url = await fileLink(server, agent, id, 'data.txt');
  const client = new BlockBlobClient(url, undefined, NO_RETRY);
  return { agent, id, receipt, lastModified, url, client };
}

const secondsFrom = (at: Date, seconds: number) => new Date(at.getTime() + seconds * 1000);

test('Get Blob Properties, Get Blob and List Blobs give the same Last-Modified, the saved_at to the second', async ({
  server,
  clock,
}) => {
  const { agent, id, lastModified, client } = await savedBlob(server, clock);
  const properties = await client.getProperties();
  assert.equal(properties.lastModified, lastModified);
  const download = await client.download();
  assert.equal(download.lastModified, lastModified);
  const link = await storageLink(server, agent, id, 'read');
  const container = new ContainerClient(
    `${link.container_url}?${link.sas_token}`,
    undefined,
    NO_RETRY,
  );
  for await (const blob of container.listBlobsFlat()) {
    assert.equal(blob.properties.lastModified, lastModified, 'the listing agrees');
  }
});

test('a read with ifModifiedSince at Last-Modified is 304; before it, the bytes', async ({
  server,
  clock,
}) => {
  const { lastModified, client, url } = await savedBlob(server, clock);
  const notModified = await refusal(
    client.getProperties({ conditions: { ifModifiedSince: lastModified } }),
  );
  assert.is(notModified[0], 304, 'Get Blob Properties');
  const raw = await sendToLink(url, {
    headers: { 'if-modified-since': lastModified.toUTCString() },
  });
  assert.is(raw.response.status, 304, 'Get Blob');
  assert.is(await raw.response.text(), '');
  assert.is(raw.response.headers.get('last-modified'), lastModified.toUTCString());
  const bytes = await client.downloadToBuffer(0, undefined, {
    conditions: { ifModifiedSince: secondsFrom(lastModified, -1) },
  });
  assert.is(bytes.toString(), 'first bytes');
});

test('a read with a past ifUnmodifiedSince answers 412 ConditionNotMet', async ({
  server,
  clock,
}) => {
  const { lastModified, client, url } = await savedBlob(server, clock);
  const past = secondsFrom(lastModified, -1);
  assert.equal(await refusal(client.getProperties({ conditions: { ifUnmodifiedSince: past } })), [
    412,
    'ConditionNotMet',
  ]);
  assert.equal(
    await refusal(client.download(0, undefined, { conditions: { ifUnmodifiedSince: past } })),
    [412, 'ConditionNotMet'],
  );
  await expectRefusal(
    await sendToLink(url, { headers: { 'if-unmodified-since': past.toUTCString() } }),
    412,
    'ConditionNotMet',
  );
  const held = await client.getProperties({ conditions: { ifUnmodifiedSince: lastModified } });
  assert.equal(held.lastModified, lastModified);
});

test('an upload with a past ifUnmodifiedSince answers 412 ConditionNotMet; the content and version stay', async ({
  server,
  clock,
}) => {
  const { agent, id, lastModified, client } = await savedBlob(server, clock);
  const before = await holdings(server, agent, [id]);
  clock.advance(3000);
  const past = secondsFrom(lastModified, -1);
  assert.equal(
    await refusal(client.upload('overwrite', 9, { conditions: { ifUnmodifiedSince: past } })),
    [412, 'ConditionNotMet'],
  );
  assert.equal(
    await refusal(client.upload('overwrite', 9, { conditions: { ifModifiedSince: lastModified } })),
    [412, 'ConditionNotMet'],
    'not modified since: a write is refused too, as Azure does',
  );
  // In blocks: the conditions travel on Put Block List.
  await client.stageBlock(blockId(1), Buffer.from('blocks'), 6);
  assert.equal(
    await refusal(
      client.commitBlockList([blockId(1)], { conditions: { ifUnmodifiedSince: past } }),
    ),
    [412, 'ConditionNotMet'],
  );
  assert.is((await client.downloadToBuffer()).toString(), 'first bytes');
  const after = await holdings(server, agent, [id]);
  assert.equal(after.workspaces, before.workspaces, 'the same version and receipts');
  assert.equal((await client.getProperties()).lastModified, lastModified);
});

test('an upload with ifUnmodifiedSince at Last-Modified saves, and answers the new Last-Modified', async ({
  server,
  clock,
}) => {
  const { lastModified, client } = await savedBlob(server, clock);
  clock.advance(2000);
  const saved = await client.upload('second', 6, {
    conditions: { ifUnmodifiedSince: lastModified },
  });
  assert.equal(saved.lastModified, secondsFrom(lastModified, 2));
  await client.stageBlock(blockId(2), Buffer.from('third'), 5);
  clock.advance(2000);
  const committed = await client.commitBlockList([blockId(2)], {
    conditions: { ifModifiedSince: lastModified },
  });
  assert.equal(committed.lastModified, secondsFrom(lastModified, 4));
  assert.is((await client.downloadToBuffer()).toString(), 'third');
});

test('a Put Blob to a new path ignores a date condition, as Azure creates the blob', async ({
  server,
  clock,
}) => {
  const agent = (await server.signUp()) as Agent;
  const id = await newWorkspace(server, agent);
  clock.advance(1000);
  const client = new BlockBlobClient(
    await fileLink(server, agent, id, 'fresh.txt'),
    undefined,
    NO_RETRY,
  );
  const created = await client.upload('new', 3, {
    conditions: { ifUnmodifiedSince: new Date(Date.UTC(2000, 0, 1)) },
  });
  assert.is(created._response.status, 201);
});

test('ifMatch decides instead of ifUnmodifiedSince when both are sent', async ({
  server,
  clock,
}) => {
  const { lastModified, client } = await savedBlob(server, clock);
  clock.advance(1000);
  const { etag } = await client.getProperties();
  const saved = await client.upload('matched', 7, {
    conditions: { ifMatch: etag, ifUnmodifiedSince: secondsFrom(lastModified, -60) },
  });
  assert.is(saved._response.status, 201);
  assert.is((await client.downloadToBuffer()).toString(), 'matched');
});

test.run();
