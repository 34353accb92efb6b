import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What validation refuses, /openapi.json says (issue 35 §1, from Schemathesis's "API rejected
 * schema-compliant request"): each rule below is shown in the description and still refused by
 * the service with its code. The patterns' agreement with the code that refuses is proved in
 * test/protocol/openapi-validation-rules.test.ts; /openapi.json is the one the service serves.
 */
type Schema = Record<string, unknown>;
interface Entry {
  parameters?: { name: string; in: string; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}
interface Context {
  server: TestServer;
  token: string;
  paths: Record<string, Record<string, Entry>>;
  schemas: Record<string, Schema>;
}

const test = suite<Context>('the description says what validation refuses');

test.before(async (context) => {
  context.server = await startTestServer();
  context.token = (await context.server.signUp()).api_token;
  const document = (await (await context.server.get('/openapi.json')).json()) as {
    paths: Context['paths'];
    components: { schemas: Context['schemas'] };
  };
  context.paths = document.paths;
  context.schemas = document.components.schemas;
});
test.after(async ({ server }) => {
  await server.close();
});

function body(context: Context, method: string, path: string): Schema {
  const schema = context.paths[path]?.[method]?.requestBody?.content['application/json']?.schema;
  assert.ok(schema, `${method} ${path} has a JSON body`);
  return schema;
}

function field(context: Context, method: string, path: string, name: string): Schema {
  return (body(context, method, path).properties as Record<string, Schema>)[name] as Schema;
}

async function refusal(
  context: Context,
  method: string,
  path: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; code: unknown }> {
  const response = await fetch(context.server.url(path), {
    method,
    headers: {
      authorization: `Bearer ${context.token}`,
      'content-type': 'application/json',
      ...headers,
    },
    body: JSON.stringify(payload),
  });
  const answer = (await response.json()) as { code?: unknown };
  return { status: response.status, code: answer.code };
}

const invalid = { status: 400, code: 'invalid_input' };

test('an amount of zero is outside the described pattern, and refused', async (context) => {
  const pattern = new RegExp(field(context, 'post', '/payments', 'amount_usdc').pattern as string);
  assert.not.ok(pattern.test('0'));
  assert.ok(pattern.test('0.01'));
  assert.equal(
    await refusal(context, 'POST', '/payments', {
      deal_id: '00000000-0000-4000-8000-000000000000',
      payer_agent_id: '00000000-0000-4000-8000-000000000000',
      amount_usdc: '0',
    }),
    invalid,
  );
});

test('an empty email is outside the described pattern, and refused', async (context) => {
  const email = field(context, 'post', '/notifications/email', 'email');
  assert.not.ok(new RegExp(email.pattern as string).test(''));
  assert.equal(await refusal(context, 'POST', '/notifications/email', { email: '' }), invalid);
});

test('a webhook URL that is not http(s) is outside the described pattern, and refused', async (context) => {
  const url = field(context, 'put', '/whoami/webhook', 'url');
  for (const bad of ['', 'ftp://example.com/']) {
    assert.not.ok(new RegExp(url.pattern as string).test(bad), bad);
    assert.equal(await refusal(context, 'PUT', '/whoami/webhook', { url: bad }), invalid);
  }
});

test('a watch naming nothing, or an axis without its value, is outside the described body, and refused', async (context) => {
  const schema = body(context, 'post', '/watches');
  assert.equal(schema.dependentRequired, { axis: ['value'], value: ['axis'] });
  assert.ok(Array.isArray(schema.anyOf), 'at least one criterion, said as anyOf');
  assert.equal(await refusal(context, 'POST', '/watches', {}), invalid);
  assert.equal(await refusal(context, 'POST', '/watches', { axis: 'place' }), invalid);
  assert.equal(
    await refusal(context, 'POST', '/watches', { match_my_listings: true, q: 'piano' }),
    invalid,
  );
});

test('an Idempotency-Key with a space is outside the described pattern, and refused', async (context) => {
  const key = context.paths['/watches']?.post?.parameters?.find(
    (parameter) => parameter.name === 'idempotency-key',
  );
  assert.ok(key, 'POST /watches takes an Idempotency-Key');
  assert.not.ok(new RegExp(key.schema.pattern as string).test('a b'));
  assert.ok(new RegExp(key.schema.pattern as string).test('0b1c-2d'));
  assert.equal(
    await refusal(context, 'POST', '/watches', { q: 'piano' }, { 'idempotency-key': 'a b' }),
    invalid,
  );
});

test('relating a convention to itself is said in words and refused', async (context) => {
  const description = String(
    (context.paths['/conventions/relate']?.post as { description?: string }).description,
  );
  assert.match(description, /two different conventions/);
  assert.equal(
    await refusal(context, 'POST', '/conventions/relate', {
      a: 'agent-services',
      b: 'agent-services',
      differences: 'none',
    }),
    invalid,
  );
});

test("/mcp's described message takes the `id: null` of JSON-RPC's answer to unreadable JSON", async (context) => {
  const id = (context.schemas.JsonRpcMessage?.properties as Record<string, Schema>).id as Schema;
  assert.ok((id.type as string[]).includes('null'));
  const response = await fetch(context.server.url('/mcp'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: '{not json',
  });
  assert.is(((await response.json()) as { id: unknown }).id, null);
});

test.run();
