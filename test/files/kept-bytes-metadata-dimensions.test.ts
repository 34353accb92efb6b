import * as assert from 'uvu/assert';
import { NOT_DIMENSION_KEYS } from '../../storage/index/file-index.ts';
import { fileLink, sendToLink, usedBytes } from '../helpers/storage-links.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Every kept byte counts (issue 32 §2), the last two instances: the `x-ms-meta-*` metadata kept
 * with a version counts with the version's bytes, against whoever saved it, from its save (or
 * Set Blob Metadata) until its bytes are let go (a newer save, a delete); and what the index
 * keeps of a header counts the fields and the `dimensions` copy of them the database stores
 * beside them. Through storage links and PUT, on the driver DATABASE_URL names (PGlite without
 * it).
 */
const QUOTA = 64 * 1024;
const test = serverSuite('every kept byte counts: metadata and dimensions', () => ({
  config: { storageQuotaBytes: QUOTA },
}));

/** The bytes `metadata` counts: its JSON, as the service keeps it. */
const metadataBytes = (metadata: Record<string, string>) =>
  Buffer.byteLength(JSON.stringify(metadata));

const metaHeaders = (metadata: Record<string, string>) =>
  Object.fromEntries(Object.entries(metadata).map(([k, v]) => [`x-ms-meta-${k}`, v]));

async function putWithMetadata(url: string, body: string, metadata: Record<string, string>) {
  const { response } = await sendToLink(url, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob', ...metaHeaders(metadata) },
    body,
  });
  return { status: response.status, text: await response.text() };
}

async function setMetadata(url: string, metadata: Record<string, string>) {
  const { response } = await sendToLink(`${url}&comp=metadata`, {
    method: 'PUT',
    headers: metaHeaders(metadata),
  });
  return { status: response.status, text: await response.text() };
}

async function remove(server: TestServer, agent: Agent, workspaceId: string, path: string) {
  const answer = await fetch(server.url(`/workspaces/${workspaceId}/files/${path}`), {
    method: 'DELETE',
    headers: { authorization: `Bearer ${agent.api_token}` },
  });
  assert.is(answer.status, 200, await answer.text());
}

// Near Azure's 8 KiB of names and values, in headers every engine takes (letters only: uWS drops names with `_`).
const big = Object.fromEntries(['a', 'b', 'c', 'd'].map((k) => [`part${k}`, k.repeat(2000)]));

test('a 10-byte file with 8 KiB of metadata counts both, every version kept, and gives both back', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const url = await fileLink(server, agent, workspaceId, 'tiny.bin');
  const saved = await putWithMetadata(url, '0123456789', big);
  assert.is(saved.status, 201, saved.text);
  assert.is(await usedBytes(server, agent), 10 + metadataBytes(big));
  // Set Blob Metadata: the count follows what is kept now.
  const small = { note: 'short' };
  const set = await setMetadata(url, small);
  assert.is(set.status, 200, set.text);
  assert.is(await usedBytes(server, agent), 10 + metadataBytes(small));
  // A newer save lets go of the older version's bytes (not markdown) and its metadata with them.
  const again = await putWithMetadata(url, 'abc', big);
  assert.is(again.status, 201, again.text);
  assert.is(await usedBytes(server, agent), 3 + metadataBytes(big));
  await remove(server, agent, workspaceId, 'tiny.bin');
  assert.is(await usedBytes(server, agent), 0);
});

test('metadata past the quota is refused with the save (507 QuotaExceeded), and by Set Blob Metadata', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  // Fill the quota to within 4 KiB with bytes, then 8 KiB of metadata does not fit.
  const filler = 'f'.repeat(QUOTA - 4 * 1024);
  await saveFile(server, agent, workspaceId, 'filler.bin', filler);
  const url = await fileLink(server, agent, workspaceId, 'tiny.bin');
  const refused = await putWithMetadata(url, '0123456789', big);
  assert.is(refused.status, 507, refused.text);
  assert.match(refused.text, 'QuotaExceeded');
  assert.is(await usedBytes(server, agent), filler.length);
  const plain = await putWithMetadata(url, '0123456789', {});
  assert.is(plain.status, 201, plain.text);
  const set = await setMetadata(url, big);
  assert.is(set.status, 507, set.text);
  assert.is(await usedBytes(server, agent), filler.length + 10);
});

test("a header's dimensions, stored beside its fields, count with them and go with a delete", async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const text = '---\nname: Bike repair\ncity: Berlin\nprice: 20 EUR\n---\nBody.\n';
  await saveFile(server, agent, workspaceId, 'offer.md', text);
  const fields = { name: 'Bike repair', city: 'Berlin', price: '20 EUR' };
  const dimensions = { city: 'Berlin', price: '20 EUR' };
  assert.is(
    await usedBytes(server, agent),
    Buffer.byteLength(text) +
      Buffer.byteLength(JSON.stringify(fields)) +
      Buffer.byteLength(JSON.stringify(dimensions)),
  );
  await remove(server, agent, workspaceId, 'offer.md');
  assert.is(await usedBytes(server, agent), 0);
});

test('the keys the count leaves out of dimensions are the ones the database column leaves out', async ({
  server,
}) => {
  const [column] = await server.services.driver.query<{ expression: string }>(
    `select pg_get_expr(d.adbin, d.adrelid) as expression
     from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
     where d.adrelid = 'indexed_versions'::regclass and a.attname = 'dimensions'`,
  );
  assert.ok(column, 'indexed_versions.dimensions is a generated column');
  const keys = [...column.expression.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]);
  assert.equal([...keys].sort(), [...NOT_DIMENSION_KEYS].sort(), column.expression);
});

test.run();
