import * as assert from 'uvu/assert';
import { healthOnceDegraded } from '../helpers/health.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { TcpProxy } from '../storage/tcp-proxy.ts';

/**
 * /health's 503 as /openapi.json describes it: the body sent while the database cannot be
 * reached has exactly the fields, and the values, of the documented 503 schema (PostgreSQL
 * behind a proxy that is taken down; PGlite cannot go away).
 */
const test = postgresSuite<{ proxy: TcpProxy; server: TestServer }>(
  "/health's 503 as /openapi.json describes it",
);

test.before(async (context) => {
  const url = await freshDatabaseUrl();
  const target = new URL(url);
  context.proxy = await TcpProxy.start(target.hostname, Number(target.port));
  context.server = await startTestServer({ databaseUrl: context.proxy.rewrite(url) });
});
test.after(async ({ proxy, server }) => {
  await proxy.up().catch(() => undefined);
  await server.close();
  await proxy.down();
});

interface ObjectSchema {
  required: string[];
  properties: Record<string, { const?: unknown; type?: string }>;
  additionalProperties?: boolean;
}

/** What in `body` the schema refuses; empty when it fits. */
function misfits(body: Record<string, unknown>, schema: ObjectSchema): string[] {
  const found: string[] = [];
  for (const name of schema.required) if (!(name in body)) found.push(`${name} is missing`);
  for (const [name, value] of Object.entries(body)) {
    const property = schema.properties[name];
    if (!property) {
      if (schema.additionalProperties === false) found.push(`${name} is not described`);
      continue;
    }
    if ('const' in property && property.const !== value) found.push(`${name} is ${String(value)}`);
    if (property.type === 'string' && typeof value !== 'string') found.push(`${name} not a string`);
  }
  return found;
}

test('the 200 and the 503 of /health are the documented bodies', async ({ proxy, server }) => {
  const document = (await (await server.get('/openapi.json')).json()) as {
    paths: Record<
      string,
      { get: { responses: Record<string, { content: Record<string, { schema: ObjectSchema }> }> } }
    >;
  };
  const responses = document.paths['/health']?.get.responses ?? {};
  const up = await server.get('/health');
  assert.is(up.status, 200);
  const upSchema = responses['200']?.content['application/json']?.schema;
  assert.ok(upSchema);
  assert.equal(misfits((await up.json()) as Record<string, unknown>, upSchema), []);

  await proxy.down();
  const down = await healthOnceDegraded(server);
  assert.match(down.headers.get('content-type') ?? '', /^application\/json/);
  assert.ok(Number(down.headers.get('retry-after')) > 0);
  const downSchema = responses['503']?.content['application/json']?.schema;
  assert.ok(downSchema, '503 is documented as JSON');
  assert.equal(misfits((await down.json()) as Record<string, unknown>, downSchema), []);
  await proxy.up();
});

test.run();
