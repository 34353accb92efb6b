import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { INDEX_PARAMS_BYTE_CAP } from '../../actors/index/queries.ts';
import { PGLITE_MEMORY, type PgliteDriver } from '../../storage/pglite/driver.ts';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Issue 32: `string_agg` over `jsonb_array_elements` of parameters took the embedded database
 * to 2 GB for good. The parameters of one query are bounded in bytes, and on PGlite the memory
 * one query may use is capped and given back by replacing the database thread.
 */
const test = suite<{ server: TestServer }>('index SQL memory bounds');

test.before(async (context) => {
  // Long enough that the attack meets the memory cap before its time limit.
  context.server = await startTestServer({ sqlTimeoutMs: 20_000 });
});
test.after(async ({ server }) => {
  await server.close();
});

const sql = (server: TestServer, token: string, body: unknown) =>
  callJson<{ code?: string; field?: string; limit_bytes?: number }>(
    server,
    'POST',
    '/index/sql',
    token,
    body,
  );

test('params past 32 KiB together are refused 400 invalid_input naming params, and a query within runs', async ({
  server,
}) => {
  const agent = await server.signUp();
  const each = 'é'.repeat(5000); // 10,000 bytes in UTF-8, within the schema's 10,000 characters
  const count = Math.floor(INDEX_PARAMS_BYTE_CAP / 10_000);
  const placeholders = (n: number) =>
    Array.from({ length: n }, (_, i) => `length($${i + 1})`).join(' + ');
  const over = await sql(server, agent.api_token, {
    sql: `select ${placeholders(count + 1)} as n`,
    params: Array.from({ length: count + 1 }, () => each),
  });
  assert.is(over.status, 400, JSON.stringify(over.body));
  assert.is(over.body.code, 'invalid_input');
  assert.is(over.body.field, 'params');
  assert.is(over.body.limit_bytes, INDEX_PARAMS_BYTE_CAP);
  const within = await sql(server, agent.api_token, {
    sql: `select ${placeholders(count)} as n`,
    params: Array.from({ length: count }, () => each),
  });
  assert.is(within.status, 200, JSON.stringify(within.body));
});

test("the string_agg attack answers 400 sql_too_complex within the memory cap, the database thread is replaced, and another agent's writes meanwhile are kept", async ({
  server,
}) => {
  if (server.services.driver.kind !== 'pglite') return;
  const driver = server.services.driver as PgliteDriver;
  const attacker = await server.signUp();
  const writer = await server.signUp();
  const workspace = await newWorkspace(server, writer);
  const before = driver.memory().restarts;
  const attack = sql(server, attacker.api_token, {
    sql: `select length(string_agg(a.value::text, '')) from jsonb_array_elements($1::jsonb) a,
      jsonb_array_elements($2::jsonb) b, jsonb_array_elements($2::jsonb) c`,
    params: [
      JSON.stringify(['x'.repeat(9990)]),
      JSON.stringify(Array.from({ length: 1500 }, (_, i) => i)),
    ],
  });
  const saved: string[] = [];
  const writing = (async () => {
    for (let i = 0; i < 10; i++) {
      await saveFile(server, writer, workspace, `notes/${i}.md`, `note ${i}`);
      saved.push(`notes/${i}.md`);
    }
  })();
  const answer = await attack;
  assert.is(answer.status, 400, JSON.stringify(answer.body));
  assert.is(answer.body.code, 'sql_too_complex');
  await writing;
  for (let i = 10; i < 15; i++) {
    await saveFile(server, writer, workspace, `notes/${i}.md`, `note ${i}`);
    saved.push(`notes/${i}.md`);
  }
  const memory = driver.memory();
  assert.ok(memory.restarts > before, 'the grown thread was replaced');
  assert.ok(memory.peakWasmBytes <= PGLITE_MEMORY.maxBytes, JSON.stringify(memory));
  assert.ok(memory.wasmBytes <= PGLITE_MEMORY.restartAboveBytes, JSON.stringify(memory));
  const files = await callJson<{ files: { path: string }[] }>(
    server,
    'GET',
    `/workspaces/${workspace}/files`,
    writer.api_token,
  );
  const paths = files.body.files.map((file) => file.path);
  for (const path of saved) assert.ok(paths.includes(path), `${path} was lost`);
});

test.run();
