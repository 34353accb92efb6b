import { ContainerClient, type StoragePipelineOptions } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { CONTENT_SETTING_HEADERS } from '../../actors/files/content-settings.ts';
import { CONTENT_SETTINGS } from '../../storage/files/files.ts';
import {
  blockId,
  blockListXml,
  fileLink,
  putBlock,
  sendToLink,
  storageLink,
  storageLinkSuite,
  usedBytes,
} from '../helpers/storage-links.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * What Azure clients set on a blob comes back as they set it (issue 35 §2): every content
 * setting the door keeps (enumerated from actors/files/content-settings.ts) through Put Blob and
 * Put Block List, answered by Get Blob, Get Blob Properties and List Blobs and counted as kept
 * bytes; names kept as spelt while two spellings name one file; Azure's `x-ms-error-code` on
 * every 304 and 412 of a read.
 */
const test = storageLinkSuite('storage links keep content settings and names as sent');

const NO_RETRY: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

/** A distinct value for each setting, as a client would send it. */
const SENT: Record<string, string> = {
  contentType: 'text/x-custom; charset=latin1',
  contentEncoding: 'identity',
  contentLanguage: 'de-CH',
  contentDisposition: 'attachment; filename="report.txt"',
  cacheControl: 'no-cache, max-age=0',
};

const sentHeaders = () =>
  Object.fromEntries(
    CONTENT_SETTINGS.map((name) => [CONTENT_SETTING_HEADERS[name].sent, SENT[name] ?? '']),
  );

async function listXml(containerUrl: string, sas: string): Promise<string> {
  const { response } = await sendToLink(`${containerUrl}?${sas}&restype=container&comp=list`);
  assert.is(response.status, 200);
  return response.text();
}

test('every content setting sent with Put Blob or Put Block List comes back on GET, HEAD and in List Blobs', async ({
  server,
}) => {
  assert.is(CONTENT_SETTINGS.length, 5, 'each setting the door keeps is in SENT');
  for (const name of CONTENT_SETTINGS) assert.ok(SENT[name], name);
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const whole = await fileLink(server, owner, id, 'settings/whole.txt');
  const put = await sendToLink(whole, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob', ...sentHeaders() },
    body: 'whole',
  });
  assert.is(put.response.status, 201);
  const blocks = await fileLink(server, owner, id, 'settings/blocks.txt');
  assert.is((await putBlock(blocks, blockId(0), 'in blocks')).response.status, 201);
  const committed = await sendToLink(`${blocks}&comp=blocklist`, {
    method: 'PUT',
    headers: sentHeaders(),
    body: blockListXml([blockId(0)]),
  });
  assert.is(committed.response.status, 201);

  for (const url of [whole, blocks]) {
    for (const method of ['GET', 'HEAD']) {
      const { response } = await sendToLink(url, { method });
      assert.is(response.status, 200, method);
      for (const name of CONTENT_SETTINGS) {
        assert.is(
          response.headers.get(CONTENT_SETTING_HEADERS[name].answered),
          SENT[name],
          `${method} ${name}`,
        );
      }
      // Whatever type was named, a browser shown it from this origin runs nothing.
      assert.is(response.headers.get('content-security-policy'), 'sandbox');
      assert.is(response.headers.get('x-content-type-options'), 'nosniff');
    }
  }
  const link = await storageLink(server, owner, id, 'read');
  const xml = await listXml(link.container_url as string, link.sas_token as string);
  const answeredAs: Record<string, string> = {
    contentType: 'Content-Type',
    contentEncoding: 'Content-Encoding',
    contentLanguage: 'Content-Language',
    contentDisposition: 'Content-Disposition',
    cacheControl: 'Cache-Control',
  };
  for (const name of CONTENT_SETTINGS) {
    const element = answeredAs[name] ?? '';
    assert.is(
      xml.split(`<${element}>${escape(SENT[name] ?? '')}</${element}>`).length - 1,
      2,
      `List Blobs ${element}`,
    );
  }
});

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
}

test("the Node SDK's blobContentType comes back, and a save naming no type is served its path's", async ({
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
  const typed = container.getBlockBlobClient('node/typed.md');
  await typed.upload('# typed', 7, { blobHTTPHeaders: { blobContentType: 'application/x-test' } });
  assert.is((await typed.getProperties()).contentType, 'application/x-test');
  // A new version that names no type has none of the old one's: its type is the path's.
  await typed.upload('# again', 7);
  assert.is((await typed.getProperties()).contentType, 'text/markdown; charset=utf-8');
  await typed.upload('# typed', 7, { blobHTTPHeaders: { blobContentType: 'application/x-test' } });
  const listed = [];
  for await (const blob of container.listBlobsFlat()) {
    listed.push([blob.name, blob.properties.contentType]);
  }
  assert.equal(listed, [['node/typed.md', 'application/x-test']]);
});

test('content settings count as kept bytes, as metadata does', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const before = await usedBytes(server, owner);
  const url = await fileLink(server, owner, id, 'counted.txt');
  const put = await sendToLink(url, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob', ...sentHeaders() },
    body: '0123456789',
  });
  assert.is(put.response.status, 201);
  const written = JSON.stringify(
    Object.fromEntries(CONTENT_SETTINGS.map((name) => [name, SENT[name]])),
  );
  assert.is((await usedBytes(server, owner)) - before, 10 + Buffer.byteLength(written));
  // Replaced by a save with none, the settings' bytes are given back with the old bytes.
  const plain = await sendToLink(url, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob' },
    body: '0123456789',
  });
  assert.is(plain.response.status, 201);
  assert.is((await usedBytes(server, owner)) - before, 10);
});

test('a 304 and a 412 of a read name the condition, x-ms-error-code: ConditionNotMet', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const url = await fileLink(server, owner, id, 'conditions.txt');
  const put = await sendToLink(url, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob' },
    body: 'conditions',
  });
  const etag = put.response.headers.get('etag') ?? '';
  const past = 'Mon, 01 Jan 2001 00:00:00 GMT';
  const future = 'Fri, 01 Jan 2100 00:00:00 GMT';
  const conditions: [Record<string, string>, number][] = [
    [{ 'if-none-match': etag }, 304],
    [{ 'if-modified-since': future }, 304],
    [{ 'if-match': '"another"' }, 412],
    [{ 'if-unmodified-since': past }, 412],
  ];
  for (const [headers, status] of conditions) {
    for (const method of ['GET', 'HEAD']) {
      const { response } = await sendToLink(url, { method, headers });
      const what = `${method} ${JSON.stringify(headers)}`;
      assert.is(response.status, status, what);
      assert.is(response.headers.get('x-ms-error-code'), 'ConditionNotMet', what);
    }
  }
});

test('two spellings of a name are one file, listed as last saved; the REST door keeps the spelling too', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  const base = link.container_url as string;
  const sas = link.sas_token as string;
  const nfd = 'dir/u\u0308ber.txt';
  const nfc = 'dir/\u00fcber.txt';
  const at = (name: string) => `${base}/${encodeURIComponent(name)}?${sas}`;
  const put = (name: string, headers: Record<string, string> = {}) =>
    sendToLink(at(name), {
      method: 'PUT',
      headers: { 'x-ms-blob-type': 'BlockBlob', ...headers },
      body: name,
    });
  const files = async () => {
    const response = await server.get(`/workspaces/${id}/files`, owner.api_token);
    return ((await response.json()) as { files: { path: string; version: number }[] }).files;
  };

  assert.is((await put(nfd)).response.status, 201);
  assert.equal(await files(), [{ ...(await files())[0], path: nfd, version: 1 }]);
  assert.ok((await listXml(base, sas)).includes(`<Name>${nfd}</Name>`), 'List Blobs spells NFD');
  // The other spelling finds the same file: create-only is refused, a read finds it.
  assert.is((await put(nfc, { 'if-none-match': '*' })).response.status, 409);
  assert.is(await (await sendToLink(at(nfc))).response.text(), nfd);
  // Saved under the other spelling, it is version 2 of one file, listed as now spelt.
  assert.is((await put(nfc)).response.status, 201);
  assert.equal(
    (await files()).map((file) => [file.path, file.version]),
    [[nfc, 2]],
  );
  // The REST door: a PUT under the NFD spelling keeps it; a GET by either spelling reads it.
  const saved = await fetch(server.url(`/workspaces/${id}/files/${encodeURIComponent(nfd)}`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${owner.api_token}` },
    body: 'rest',
  });
  assert.is(saved.status, 201);
  assert.equal(
    (await files()).map((file) => [file.path, file.version]),
    [[nfd, 3]],
  );
  const read = await server.get(
    `/workspaces/${id}/files/${encodeURIComponent(nfc)}`,
    owner.api_token,
  );
  assert.is(await read.text(), 'rest');
  // Receipts name the file by its key, whatever spelling saved it.
  const receipts = (await (
    await server.get(`/workspaces/${id}/receipts`, owner.api_token)
  ).json()) as {
    receipts: { path: string }[];
  };
  assert.equal([...new Set(receipts.receipts.map((receipt) => receipt.path))], [nfc]);
});

test.run();
