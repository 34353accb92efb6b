import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { BlockBlobClient } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { indexedFieldBytes } from '../../storage/index/file-index.ts';
import { callJson as call } from '../helpers/http.ts';
import { fileLink, usedBytes } from '../helpers/storage-links.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { deleteFile, newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * What the service keeps of a deleted file is what the quota counts (issue 32 §2, rule
 * `every_kept_byte`): a delete gives back every version's bytes and its header fields, and the
 * index lets go of what it kept of them (fields, body, search words) in the same transaction;
 * each version keeps only who saved it, when, its number and fingerprint, so `file_versions`
 * still lists the history. A save and delete loop of a file with a 200 KiB header and a 900 KiB
 * body then leaves the quota where it started and the stored rows the size of their keys.
 * Through PUT, DELETE, whoami and query_index, on the driver DATABASE_URL names (PGlite without).
 */
const test = serverSuite('a deleted file keeps nothing the quota does not count');

const CYCLES = 4;

/** A header whose fields take about 200 KiB as JSON (from 18 KB of text), then 900 KiB of words. */
function bigFile(): string {
  const items = Array.from({ length: 2_000 }, () => `w${randomBytes(4).toString('hex')}`);
  const aliases = Array.from({ length: 8 }, (_, i) => `a${i + 1}: *a`);
  const words = randomBytes((900 * 1024) / 2)
    .toString('hex')
    .replace(/(.{12})/g, '$1 ');
  return `---\nconvention: let-go-test\na0: &a [${items.join(',')}]\n${aliases.join('\n')}\n---\n${words}`;
}

const fieldsBytes = (text: string) => {
  const items = /a0: &a \[([^\]]*)\]/.exec(text)?.[1]?.split(',') ?? [];
  const fields: Record<string, unknown> = { convention: 'let-go-test' };
  for (let i = 0; i <= 8; i++) fields[`a${i}`] = items;
  // The fields and their copy in `dimensions`, both kept and counted (issue 32 §2).
  return indexedFieldBytes(fields).kept;
};

/** What the database stores of the path's index rows: whole rows, and their text columns. */
async function storedBytes(server: TestServer, workspaceId: string, path: string) {
  const [row] = await server.services.driver.query<{ rows: number; text: number; n: number }>(
    `select coalesce(sum(pg_column_size(i.*)), 0)::int8 as rows,
       coalesce(sum(pg_column_size(i.fields) + pg_column_size(i.body)
         + pg_column_size(i.search)), 0)::int8 as text,
       count(*)::int8 as n
     from indexed_versions i where i.workspace_id = $1 and i.path = $2`,
    [workspaceId, path],
  );
  return { rows: Number(row?.rows), text: Number(row?.text), n: Number(row?.n) };
}

test(`${CYCLES} saves and deletes of a 1.1 MB indexed file leave the quota at its start and the stored rows growing by their keys alone`, async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const path = 'loop.md';
  const start = await usedBytes(server, agent);
  assert.is(start, 0);
  const after: { rows: number; text: number; n: number }[] = [];
  let live = { rows: 0, text: 0, n: 0 };
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    const text = bigFile();
    await saveFile(server, agent, workspaceId, path, text);
    // Indexed, and counted: the file's bytes and its header's fields.
    assert.is(await usedBytes(server, agent), Buffer.byteLength(text) + fieldsBytes(text));
    live = await storedBytes(server, workspaceId, path);
    await deleteFile(server, agent, workspaceId, path);
    assert.is(await usedBytes(server, agent), start, `cycle ${cycle + 1}: whoami back to start`);
    after.push(await storedBytes(server, workspaceId, path));
  }
  const first = after[0] as { rows: number; text: number; n: number };
  const last = after[CYCLES - 1] as { rows: number; text: number; n: number };
  assert.is(last.n, CYCLES, 'one row a version: the history stays');
  const perCycle = (last.rows - first.rows) / (CYCLES - 1);
  console.log(
    `  the path's rows with one version live: ${live.rows} bytes (text ${live.text}); after ${CYCLES} cycles: ` +
      `${last.rows} bytes in ${last.n} rows (text ${last.text}), ${perCycle} a cycle`,
  );
  // A cycle adds a row of keys: under 1 KiB, where the live version took more than 1 MB.
  assert.ok(live.rows > 1024 * 1024, `a live version is stored whole (${live.rows} bytes)`);
  assert.ok(perCycle < 1024, `${perCycle} bytes a cycle`);
  // The text columns are as small after N cycles as after one (their empty values).
  assert.is(last.text / last.n, first.text / first.n, 'fields, body and search emptied');
});

test('file_versions still lists a deleted file’s versions with path, version, author and time, and no header or text; the path saves and indexes again', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const path = 'history.md';
  await saveFile(server, agent, workspaceId, path, '---\ncity: Berlin\n---\nBike repair.\n');
  await saveFile(server, agent, workspaceId, path, '---\ncity: Potsdam\n---\nBike repair.\n');
  await deleteFile(server, agent, workspaceId, path);
  await saveFile(server, agent, workspaceId, path, '---\ncity: Leipzig\n---\nBoat repair.\n');
  const answer = await call<{ rows: unknown[][] }>(server, 'POST', '/index/sql', agent.api_token, {
    sql: `select version, author_id, saved_at is not null, convention, fields, body,
              search = ''::tsvector
            from file_versions where path = $1 order by version`,
    params: [path],
  });
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.rows, [
    [1, agent.agent_id, true, null, {}, '', true],
    [2, agent.agent_id, true, null, {}, '', true],
    [4, agent.agent_id, true, null, { city: 'Leipzig' }, 'Boat repair.\n', false],
  ]);
  const found = await call<{ rows: unknown[][] }>(server, 'POST', '/index/sql', agent.api_token, {
    sql: `select version from file_versions
          where search @@ websearch_to_tsquery('english', 'Berlin bike')`,
  });
  assert.equal(found.body.rows, [], 'no search finds a deleted version’s words');
});

test('after a delete, no column of any row kept for the path holds what the agent wrote (header, text, metadata), whatever table the catalogue names', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  // A word no stemmer changes, in the header, the text and the x-ms-meta-* of every version.
  const marker = 'zqxjv';
  const paths = ['every-column.md', 'plain.txt'];
  for (const path of paths) {
    const blob = new BlockBlobClient(await fileLink(server, agent, workspaceId, path));
    for (const n of [1, 2]) {
      const text = `---\ntitle: ${marker}\ntags: [${marker}]\n---\n${marker} body ${n}.\n`;
      await blob.upload(text, Buffer.byteLength(text), { metadata: { note: `${marker}${n}` } });
    }
  }
  for (const path of paths) await deleteFile(server, agent, workspaceId, path);
  // Every table with rows per (workspace_id, path), as the catalogue has them.
  const tables = await server.services.driver.query<{ table: string }>(
    `select c.relname as table from pg_class c
     join pg_namespace n on n.oid = c.relnamespace and n.nspname = 'public'
     where c.relkind in ('r', 'p') and not c.relispartition
       and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'path'
         and not a.attisdropped)
       and exists (select 1 from pg_attribute a where a.attrelid = c.oid
         and a.attname = 'workspace_id' and not a.attisdropped)
     order by 1`,
  );
  const names = tables.map((t) => t.table);
  assert.ok(names.includes('indexed_versions') && names.includes('file_versions'), names.join());
  const kept: string[] = [];
  for (const table of names) {
    const rows = await server.services.driver.query<Record<string, unknown>>(
      `select * from ${table} where workspace_id = $1 and path = any($2::text[])`,
      [workspaceId, paths],
    );
    for (const row of rows) {
      for (const [column, value] of Object.entries(row)) {
        if (JSON.stringify(value ?? null).includes(marker)) {
          kept.push(`${table}.${column} of ${String(row.path)} v${String(row.version)}`);
        }
      }
    }
  }
  assert.equal(kept, []);
});

test('migration 041 empties what was kept of the files deleted before it, and leaves every live version as it was', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  await saveFile(server, agent, workspaceId, 'gone.md', '---\ncity: Berlin\n---\nOld text.\n');
  await saveFile(server, agent, workspaceId, 'gone.md', '---\ncity: Bonn\n---\nOld text.\n');
  await deleteFile(server, agent, workspaceId, 'gone.md');
  await saveFile(server, agent, workspaceId, 'live.md', '---\ncity: Jena\n---\nLive text.\n');
  await saveFile(server, agent, workspaceId, 'live.md', '---\ncity: Gera\n---\nLive text.\n');
  const { driver } = server.services;
  // The deleted file's rows as a delete left them before this change: header, text, metadata.
  await driver.query(
    `update indexed_versions set fields = '{"city": "Berlin"}', body = 'Old text.',
       search = to_tsvector('pg_catalog.english', 'Berlin Old text')
     where workspace_id = $1 and path = 'gone.md'`,
    [workspaceId],
  );
  await driver.query(
    `update file_versions set metadata = '{"note": "old"}'
     where workspace_id = $1 and action = 'save'`,
    [workspaceId],
  );
  const rows = () =>
    driver.query<{ path: string; version: number; fields: unknown; body: string; empty: boolean }>(
      `select path, version, fields, body, search = ''::tsvector as empty from indexed_versions
       where workspace_id = $1 order by path, version`,
      [workspaceId],
    );
  const before = await rows();
  const migration = new URL(
    '../../storage/migrations/041_deleted_files_let_go.sql',
    import.meta.url,
  );
  await driver.transaction((tx) => tx.script(readFileSync(migration, 'utf8')));
  const after = await rows();
  assert.equal(
    after.filter((r) => r.path === 'gone.md').map((r) => [r.version, r.fields, r.body, r.empty]),
    [
      [1, {}, '', true],
      [2, {}, '', true],
    ],
  );
  assert.equal(
    after.filter((r) => r.path === 'live.md'),
    before.filter((r) => r.path === 'live.md'),
  );
  const metadata = await driver.query<{ path: string; version: number; metadata: unknown }>(
    `select path, version, metadata from file_versions
     where workspace_id = $1 and action = 'save' order by path, version`,
    [workspaceId],
  );
  assert.equal(
    metadata.map((m) => [m.path, m.version, m.metadata]),
    [
      ['gone.md', 1, null],
      ['gone.md', 2, null],
      ['live.md', 1, { note: 'old' }],
      ['live.md', 2, { note: 'old' }],
    ],
  );
});

test.run();
