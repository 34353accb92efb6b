import { BlockBlobClient, type StoragePipelineOptions } from '@azure/storage-blob';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { describeHeaderThread, holdHeaderThread } from '../../actors/index/header-thread.ts';
import { connectMcp } from '../helpers/clients.ts';
import { adminConnection } from '../helpers/postgres-backends.ts';
import { freshDatabaseUrl, TEST_DATABASE_URL } from '../helpers/storage.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, type TestAgent } from '../helpers/workspaces.ts';

/**
 * A markdown file's YAML header is read within bounds (64 KiB, 1,000 top-level keys, nesting,
 * anchors, aliases, tags) and never on the event loop when it is large: a hostile header saves
 * at once with an index error naming the bound, and the service answers everyone else while
 * any header is being read. (Found in issue 17: 30,000 keys held every request for 10 s.)
 */
const test = suite<{ server: TestServer }>('YAML headers are read within bounds, off the loop');

const NO_RETRY: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

/** The server's own database on PostgreSQL, to list its backends (whatTheDatabaseDoes). */
let databaseUrl: string | undefined;

test.before(async (context) => {
  databaseUrl = TEST_DATABASE_URL ? await freshDatabaseUrl() : undefined;
  context.server = await startTestServer({
    storageQuotaBytes: 64 * 1024 * 1024,
    ...(databaseUrl && { databaseUrl }),
  });
});

/**
 * A save here answers within seconds. One PUT of this suite went unanswered for 300 s (fetch's
 * own limit) in one CI run on PostgreSQL (stop 48), and no run since has done it: past this much
 * the test fails with what the header thread and every backend of its database were doing, so
 * the next time names it.
 */
const PUT_PATIENCE_MS = 60_000;

async function whatTheDatabaseDoes(): Promise<string> {
  if (!databaseUrl) return 'PGlite: no backends to list';
  const admin = adminConnection(databaseUrl, 'header-bounds diagnosis');
  try {
    const rows = await admin`
      select pid, application_name, state, wait_event_type, wait_event,
        left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 120) as query
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
    return JSON.stringify(rows);
  } finally {
    await admin.end({ timeout: 5 });
  }
}
test.after(async ({ server }) => {
  await server.close();
});

const markdown = (lines: string[]) => `---\n${lines.join('\n')}\n---\n# Body\n`;
const times = <T>(count: number, line: (index: number) => T) =>
  Array.from({ length: count }, (_, index) => line(index));

/** The three headers of the issue, each far past the byte bound. */
const HOSTILE = [
  { name: '30,000 keys', text: markdown(times(30_000, (i) => `k${i}: v`)) },
  {
    name: '40,000 anchors and 20,000 aliases',
    text: markdown([
      ...times(40_000, (i) => `a${i}: &x${i} v`),
      ...times(20_000, (i) => `b${i}: *x${i}`),
    ]),
  },
  { name: '40,000 !!str tags', text: markdown(times(40_000, (i) => `t${i}: !!str v`)) },
];

type Listed = { path: string; index_error: string | null };

async function indexError(server: TestServer, agent: TestAgent, id: string, path: string) {
  const answer = await callJson<{ files: Listed[] }>(
    server,
    'GET',
    `/workspaces/${id}/files?prefix=${encodeURIComponent(path)}`,
    agent.api_token,
  );
  assert.is(answer.status, 200);
  const file = answer.body.files.find((listed) => listed.path === path);
  assert.ok(file, `${path} was saved`);
  return file.index_error;
}

function put(server: TestServer, agent: TestAgent, id: string, path: string, text: string) {
  return fetch(server.url(`/workspaces/${id}/files/${path}`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body: text,
    signal: AbortSignal.timeout(PUT_PATIENCE_MS),
  }).then(
    async (response) => {
      assert.is(response.status, 201, await response.text());
    },
    async (error: unknown) => {
      const backends = await whatTheDatabaseDoes().catch(String);
      throw new Error(
        `PUT ${path} was not answered (${String(error)}); ${describeHeaderThread()}; backends: ${backends}`,
      );
    },
  );
}

async function writeOverMcp(client: Client, id: string, path: string, text: string) {
  const saved = (await client.callTool({
    name: 'write_file',
    arguments: { workspace_id: id, path, content: text },
  })) as { isError?: boolean };
  assert.not.ok(saved.isError, JSON.stringify(saved).slice(0, 500));
}

async function fileLink(server: TestServer, agent: TestAgent, id: string, path: string) {
  const answer = await callJson<{ file_url: string }>(
    server,
    'POST',
    `/workspaces/${id}/sas`,
    agent.api_token,
    { access: 'readwrite', path },
  );
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return new BlockBlobClient(answer.body.file_url, undefined, NO_RETRY);
}

/** /health and another agent's whoami, both answered. */
async function othersAreAnswered(server: TestServer, other: TestAgent) {
  const [health, whoami] = await Promise.all([
    server.get('/health'),
    callJson<{ agent_id: string }>(server, 'GET', '/whoami', other.api_token),
  ]);
  assert.is(health.status, 200);
  assert.is(whoami.status, 200);
  assert.is(whoami.body.agent_id, other.agent_id);
}

for (const { name, text } of HOSTILE) {
  test(`a header of ${name} saves through PUT, MCP write_file and storage links with an index error naming the 64 KiB bound`, async ({
    server,
  }) => {
    const owner = await server.signUp();
    const other = await server.signUp();
    const id = await newWorkspace(server, owner);
    const client = await connectMcp(server, owner.api_token, 'header-bounds');
    try {
      const blob = await fileLink(server, owner, id, 'link.md');
      const blocks = await fileLink(server, owner, id, 'blocks.md');
      const bytes = Buffer.from(text);
      const half = Math.floor(bytes.length / 2);
      const blockIds = ['AAAA', 'AAAB'];
      const saves = Promise.all([
        put(server, owner, id, 'put.md', text),
        writeOverMcp(client, id, 'mcp.md', text),
        blob.upload(bytes, bytes.length),
        (async () => {
          await blocks.stageBlock(blockIds[0] as string, bytes.subarray(0, half), half);
          await blocks.stageBlock(blockIds[1] as string, bytes.subarray(half), bytes.length - half);
          await blocks.commitBlockList(blockIds);
        })(),
      ]);
      // Asked while the saves are under way: answered as ever.
      await othersAreAnswered(server, other);
      await saves;
      for (const path of ['put.md', 'mcp.md', 'link.md', 'blocks.md']) {
        assert.match(
          (await indexError(server, owner, id, path)) ?? 'no index error',
          /at most 65536 bytes/,
          path,
        );
      }
    } finally {
      await client.close();
    }
  });
}

test('each bound inside 64 KiB is named in the index error: top-level keys, nesting, anchors, aliases, tags, duplicates, text the database cannot hold', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const cases: [string, string, RegExp][] = [
    ['keys.md', markdown(times(2000, (i) => `k${i}: v`)), /more than 1000 top-level keys/],
    [
      'flow-keys.md',
      markdown([`{${times(1500, (i) => `k${i}: 1`).join(', ')}}`]),
      /more than 1000 top-level keys/,
    ],
    ['deep.md', markdown([`k: ${'['.repeat(40)}${']'.repeat(40)}`]), /more than 32 levels/],
    ['anchors.md', markdown(times(150, (i) => `a${i}: &x${i} v`)), /more than 100 anchors/],
    [
      'aliases.md',
      markdown(['a: &x v', ...times(150, (i) => `b${i}: *x`)]),
      /more than 100 aliases/,
    ],
    ['tags.md', markdown(['k:', ...times(1500, () => '  - !!str v')]), /more than 1000 tags/],
    [
      'twice.md',
      markdown(['k:', ...times(3000, (i) => `  n${i}: v`), '  n7: again']),
      /not valid: Map keys must be unique \(`n7`/,
    ],
    // YAML escapes make text the database cannot hold: a lone surrogate, NUL.
    ['surrogate.md', markdown(['k: "a\\ud800b"']), /field k: holds a lone UTF-16 surrogate/],
    ['nul.md', markdown(['k: ["ok", "a\\0b"]']), /field k\.1: holds NUL/],
  ];
  for (const [path, text] of cases) await put(server, owner, id, path, text);
  for (const [path, , bound] of cases) {
    assert.match((await indexError(server, owner, id, path)) ?? 'no index error', bound, path);
  }
});

test('a listing past the key bound is refused by post_listing at once, naming the bound', async ({
  server,
}) => {
  const seller = await server.signUp();
  const dimensions = Object.fromEntries(times(2000, (i) => [`d${i}`, 'v']));
  const listing = { kind: 'can', name: 'Everything', description: 'All of it.', can: 'all' };
  const overHttp = await callJson<{ code: string; detail: string }>(
    server,
    'POST',
    '/listings',
    seller.api_token,
    { ...listing, dimensions },
  );
  assert.is(overHttp.status, 422, JSON.stringify(overHttp.body));
  assert.is(overHttp.body.code, 'listing_invalid');
  assert.match(overHttp.body.detail, /more than 1000 top-level keys/);
  const client = await connectMcp(server, seller.api_token, 'header-bounds');
  try {
    const overMcp = (await client.callTool({
      name: 'post_listing',
      arguments: { ...listing, dimensions },
    })) as { isError?: boolean; content: { text?: string }[] };
    assert.ok(overMcp.isError);
    assert.match(overMcp.content[0]?.text ?? '', /more than 1000 top-level keys/);
  } finally {
    await client.close();
  }
});

/** A header inside every bound, but large: read on the header thread. */
const LARGE = markdown(times(900, (i) => `key${i}: ${'x'.repeat(60)}`));

test('health and another agent are answered while a large header is being read, and the save completes after', async ({
  server,
}) => {
  assert.ok(Buffer.byteLength(LARGE) > 48 * 1024, 'the header is large');
  const owner = await server.signUp();
  const other = await server.signUp();
  const id = await newWorkspace(server, owner);
  const client = await connectMcp(server, owner.api_token, 'header-bounds');
  try {
    for (const save of [
      () => put(server, owner, id, 'large.md', LARGE),
      () => writeOverMcp(client, id, 'large-mcp.md', LARGE),
    ]) {
      // The header thread is busy for as long as the test says: a header that takes that long.
      const hold = holdHeaderThread();
      let saved = false;
      const saving = save().then(() => (saved = true));
      const first = await Promise.race([
        hold.queuedBehind.then(() => 'the save waits for its header' as const),
        saving.then(() => 'the save ended' as const),
      ]);
      assert.is(first, 'the save waits for its header', 'a large header is read off the loop');
      await othersAreAnswered(server, other);
      assert.not.ok(saved, 'the save was still running when the others were answered');
      hold.release();
      await saving;
    }
  } finally {
    await client.close();
  }
  for (const path of ['large.md', 'large-mcp.md']) {
    assert.is(await indexError(server, owner, id, path), null, path);
  }
  const rows = await server.services.driver.query<{ path: string; fields: object }>(
    'select path, fields from indexed_versions where workspace_id = $1 order by path',
    [id],
  );
  assert.equal(
    rows.map((row) => [row.path, Object.keys(row.fields).length]),
    [
      ['large-mcp.md', 900],
      ['large.md', 900],
    ],
  );
});

test.run();
