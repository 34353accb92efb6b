import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * Every save of a markdown file with a YAML header is indexed in the transaction of its
 * receipt: one row per version, the header as fields, the body; a header that cannot be read
 * still saves the file and leaves an index error on it. (The SQL door over the index comes
 * next; until then the rows are read from the database here.)
 */
const test = suite<{ server: TestServer }>('markdown files are indexed as they are saved');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

type Agent = TestAgent;
type Listed = { path: string; version: number; index_error: string | null };

async function listed(server: TestServer, agent: Agent, id: string): Promise<Listed[]> {
  const response = await server.get(`/workspaces/${id}/files`, agent.api_token);
  return ((await response.json()) as { files: Listed[] }).files;
}

async function indexed(server: TestServer, id: string) {
  return server.services.driver.query<{
    path: string;
    version: number;
    author_id: string;
    visibility: string;
    convention: string | null;
    fields: Record<string, unknown>;
    body: string;
  }>(
    `select path, version, author_id, visibility, convention, fields, body
     from indexed_versions where workspace_id = $1 order by path, version`,
    [id],
  );
}

const LISTING = `---
convention: local-services
name: Bike repair
city: Berlin
price: 40
tags: [repair, bikes]
---
# Bike repair

Flat tyres fixed the same day.
`;

test('a markdown file with a YAML header is indexed: its header as fields, its body, its convention, per version', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner, 'public');
  await saveFile(server, owner, id, 'listings/bike.md', LISTING);
  await saveFile(server, owner, id, 'listings/bike.md', LISTING.replace('price: 40', 'price: 35'));
  const rows = await indexed(server, id);
  assert.is(rows.length, 2, 'one row per version');
  const [first, second] = rows;
  assert.equal(first?.fields, {
    convention: 'local-services',
    name: 'Bike repair',
    city: 'Berlin',
    price: 40,
    tags: ['repair', 'bikes'],
  });
  assert.is(first?.convention, 'local-services');
  assert.is(first?.visibility, 'public');
  assert.is(first?.author_id, owner.agent_id);
  assert.is(first?.body, '# Bike repair\n\nFlat tyres fixed the same day.\n');
  assert.is(second?.version, 2);
  assert.is(second?.fields.price, 35);
  assert.equal(
    (await listed(server, owner, id)).map((file) => file.index_error),
    [null],
  );
});

test('a header that is not valid YAML still saves the file, and list_files shows why it is not indexed', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'broken.md', '---\nname: [unclosed\n---\nbody\n');
  await saveFile(server, owner, id, 'list.md', '---\n- just\n- a list\n---\nbody\n');
  await saveFile(server, owner, id, 'twice.md', '---\nname: a\nname: b\n---\n');
  await saveFile(server, owner, id, 'open.md', '---\nname: never closed\n');
  const files = await listed(server, owner, id);
  const errors = Object.fromEntries(files.map((file) => [file.path, file.index_error]));
  assert.match(errors['broken.md'] ?? '', /not valid/);
  assert.match(errors['list.md'] ?? '', /mapping/);
  assert.match(errors['twice.md'] ?? '', /not valid/);
  assert.match(errors['open.md'] ?? '', /not closed/);
  assert.equal(await indexed(server, id), []);
  // Mended, the file is indexed and its error is gone.
  await saveFile(server, owner, id, 'broken.md', '---\nname: mended\n---\nbody\n');
  const mended = (await listed(server, owner, id)).find((file) => file.path === 'broken.md');
  assert.is(mended?.index_error, null);
  assert.equal(
    (await indexed(server, id)).map((row) => [row.path, row.fields]),
    [['broken.md', { name: 'mended' }]],
  );
});

test('files that are not markdown with a header are not indexed and show no index error', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'notes.md', '# No header here\n');
  await saveFile(server, owner, id, 'data.yaml', '---\nname: not markdown\n---\n');
  assert.equal(await indexed(server, id), []);
  assert.equal(
    (await listed(server, owner, id)).map((file) => file.index_error),
    [null, null],
  );
});

test('a deleted file leaves the current view, its indexed versions stay on record', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'gone.md', LISTING);
  const deleted = await fetch(server.url(`/workspaces/${id}/files/gone.md`), {
    method: 'DELETE',
    headers: { authorization: `Bearer ${owner.api_token}` },
  });
  assert.is(deleted.status, 200);
  const current = await server.services.driver.query(
    `select i.path from indexed_versions i join files f
       on f.workspace_id = i.workspace_id and f.path = i.path and f.version = i.version
     where i.workspace_id = $1`,
    [id],
  );
  assert.equal(current, []);
  assert.is((await indexed(server, id)).length, 1);
});

test('only the version a file holds now is current: not after a save whose header breaks, nor after a delete', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const currentPaths = async () =>
    (
      await server.services.driver.query<{ path: string; version: number }>(
        'select path, version from indexed_versions where workspace_id = $1 and current order by path',
        [id],
      )
    ).map((row) => [row.path, row.version]);
  await saveFile(server, owner, id, 'a.md', LISTING);
  await saveFile(server, owner, id, 'a.md', LISTING);
  await saveFile(server, owner, id, 'b.md', LISTING);
  assert.equal(await currentPaths(), [
    ['a.md', 2],
    ['b.md', 1],
  ]);
  await saveFile(server, owner, id, 'a.md', '---\nkey: [unclosed\n---\n');
  assert.equal(await currentPaths(), [['b.md', 1]]);
  const deleted = await fetch(server.url(`/workspaces/${id}/files/b.md`), {
    method: 'DELETE',
    headers: { authorization: `Bearer ${owner.api_token}` },
  });
  assert.is(deleted.status, 200);
  assert.equal(await currentPaths(), []);
});

test.run();
