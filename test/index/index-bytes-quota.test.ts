import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { INDEX_FIELDS_MAX_BYTES, indexedFieldBytes } from '../../storage/index/file-index.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { usedBytes } from '../helpers/storage-links.ts';
import { deleteFile, newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * What the index keeps of a markdown file's YAML header is bounded and counted (issue 32 §2): a
 * header of a few aliases of a large list, which expanded to 8.6 MB of stored fields from 40 KB,
 * saves with an index error naming the 256 KiB bound of fields per version; the fields the index
 * does keep count against their author's quota (rule `every_kept_byte`) from the save until a
 * delete, and a save they would take past the quota is refused whole. Through PUT, on the driver
 * DATABASE_URL names (PGlite without it).
 */
const QUOTA = 200 * 1024;

const test = suite<{ server: TestServer }>('the index keeps bounded, counted bytes');

test.before(async (context) => {
  context.server = await startTestServer({ storageQuotaBytes: QUOTA });
});
test.after(async ({ server }) => {
  await server.close();
});

/** A header of one anchored list of `items` items, then `aliases` aliases of it. */
function aliasedHeader(items: number, aliases: number): string {
  const list = Array.from({ length: items }, () => 'x').join(',');
  const copies = Array.from({ length: aliases }, (_, i) => `a${i + 1}: *a`);
  return `---\na0: &a [${list}]\n${copies.join('\n')}\n---\n# Body\n`;
}

function put(server: TestServer, agent: TestAgent, id: string, path: string, text: string) {
  return fetch(server.url(`/workspaces/${id}/files/${path}`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body: text,
  });
}

async function listed(server: TestServer, agent: TestAgent, id: string) {
  const answer = await callJson<{ files: { path: string; index_error: string | null }[] }>(
    server,
    'GET',
    `/workspaces/${id}/files`,
    agent.api_token,
  );
  assert.is(answer.status, 200);
  return answer.body.files;
}

// The fields and the copy of them `dimensions` keeps beside them: both are kept, both count.
const fieldBytes = (fields: Record<string, unknown>) => indexedFieldBytes(fields).kept;

test("the issue's header (99 aliases of a 20,000-item list) saves with an index error naming the 256 KiB bound, and only its file bytes count", async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const text = aliasedHeader(20_000, 99);
  await saveFile(server, agent, id, 'bomb.md', text);
  const [file] = await listed(server, agent, id);
  assert.match(file?.index_error ?? 'indexed', `at most ${INDEX_FIELDS_MAX_BYTES} bytes`);
  assert.is(await usedBytes(server, agent), Buffer.byteLength(text));
});

test("a header's fields count against its author from the save, every version's, and a delete gives them back", async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  // Three aliases of 2,000 items: 8 KB of text, 32 KB of fields.
  const first = aliasedHeader(2_000, 3);
  const second = '---\ntitle: plain\n---\nbody\n';
  await saveFile(server, agent, id, 'notes.md', first);
  const firstFields = fieldBytes({
    a0: Array(2_000).fill('x'),
    a1: Array(2_000).fill('x'),
    a2: Array(2_000).fill('x'),
    a3: Array(2_000).fill('x'),
  });
  assert.is(await usedBytes(server, agent), Buffer.byteLength(first) + firstFields);
  await saveFile(server, agent, id, 'notes.md', second);
  assert.is(
    await usedBytes(server, agent),
    Buffer.byteLength(first) +
      firstFields +
      Buffer.byteLength(second) +
      fieldBytes({ title: 'plain' }),
  );
  await deleteFile(server, agent, id, 'notes.md');
  assert.is(await usedBytes(server, agent), 0);
});

test('a save whose fields would take its author past the quota is refused with quota_exceeded, and nothing of it is kept', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  // 10 KB of text whose fields are 200 KB: the file fits the 200 KiB quota, its fields with it do
  // not, and they are within the 256 KiB the index keeps of a version.
  const text = aliasedHeader(5_000, 9);
  assert.ok(Buffer.byteLength(text) < QUOTA / 10);
  const refused = await put(server, agent, id, 'big.md', text);
  assert.is(refused.status, 507);
  assert.is(((await refused.json()) as { code: string }).code, 'quota_exceeded');
  assert.equal(await listed(server, agent, id), []);
  assert.is(await usedBytes(server, agent), 0);
});

test.run();
