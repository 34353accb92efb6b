import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { resolveBinding } from '../../protocol/binding.ts';
import { toJsonSchema, type JsonSchema } from '../../protocol/json-schema.ts';
import { pathParameters, restParameter, type Operation } from '../../protocol/operation.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { connectMcp } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { validInput } from '../helpers/operation-inputs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What a hostile agent sends that no schema names: NUL in text, numbers past the database's
 * range, nesting without end, prototype keys, backslashes in paths. Every operation answers
 * each with 400 and a code naming the field, on every door; never 500.
 */
const test = suite<{ server: TestServer; operator: string; mcp: Client; workspaceId: string }>(
  'hostile input gets 400 naming the field, on every operation and door',
);

test.before(async (context) => {
  // The operator may call every operation, operator-only ones included.
  context.operator = newToken();
  context.server = await startTestServer({ operatorToken: context.operator });
  context.mcp = await connectMcp(context.server, context.operator, 'hostile input');
  const created = await callJson<{ workspace_id: string }>(
    context.server,
    'POST',
    '/workspaces',
    context.operator,
    { name: 'hostile' },
  );
  context.workspaceId = created.body.workspace_id;
});
test.after(async ({ server, mcp }) => {
  await mcp.close();
  await server.close();
});

const NUL_TEXT = 'a\u0000b';
/** A lone high surrogate: JSON can carry it (`"\\ud800"`), UTF-8 cannot. */
const LONE_SURROGATE = 'a\ud800b';
const HUGE = 99_999_999_999;

interface Problem {
  status: number;
  code?: string;
  field?: string;
  rule?: string;
}

/** A top-level field of an operation's input, and the JSON Schema of its value. */
function fieldsOf(operation: Operation): [string, JsonSchema][] {
  const schema = toJsonSchema(operation.input, 'input');
  return Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>);
}

function types(schema: JsonSchema): unknown[] {
  const branches = (schema.anyOf ?? schema.oneOf ?? []) as JsonSchema[];
  return [schema.type, ...branches.map((branch) => branch.type)];
}

/**
 * A value of `schema` holding NUL in its first string, and where the NUL sits below it (as the
 * refusal names it: `files.0`, `dimensions.k`); undefined when the schema holds no string.
 */
function withNul(
  schema: JsonSchema,
  text = NUL_TEXT,
): { value: unknown; below: (string | number)[] } | undefined {
  if (types(schema).includes('string')) return { value: text, below: [] };
  if (schema.type === 'array' && schema.items) {
    const item = withNul(schema.items as JsonSchema, text);
    return item && { value: [item.value], below: [0, ...item.below] };
  }
  if (schema.type === 'object') {
    for (const [key, sub] of Object.entries(
      (schema.properties ?? {}) as Record<string, JsonSchema>,
    )) {
      const inner = withNul(sub, text);
      if (inner) return { value: { [key]: inner.value }, below: [key, ...inner.below] };
    }
    if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
      const inner = withNul(schema.additionalProperties as JsonSchema, text);
      if (inner) return { value: { k: inner.value }, below: ['k', ...inner.below] };
    }
  }
  return undefined;
}

/** Sends an operation's input over HTTP: path parameters in the path, the rest as its body or query. */
async function overHttp(
  server: TestServer,
  token: string,
  operation: Operation,
  input: Record<string, unknown>,
): Promise<Problem> {
  const fields = { ...input };
  const rest = restParameter(operation.path);
  let path = operation.path;
  for (const name of pathParameters(operation.path)) {
    const value = String(fields[name] ?? (name === rest ? 'a.md' : randomUUID()));
    delete fields[name];
    const encoded =
      name === rest
        ? value.split('/').map(encodeURIComponent).join('/')
        : encodeURIComponent(value);
    path = path.replace(`${name === rest ? '*' : ':'}${name}`, encoded);
  }
  const binding = resolveBinding(operation.method, operation.binding);
  let body: string | undefined;
  if (binding.body.kind === 'json') body = JSON.stringify(fields);
  else {
    const query = new URLSearchParams(
      Object.entries(fields).map(([name, value]) => [name, String(value)]),
    ).toString();
    if (query) path += `?${query}`;
    if (binding.body.kind === 'bytes') body = '';
  }
  const response = await fetch(server.url(path), {
    method: operation.method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(binding.body.kind === 'json' ? { 'content-type': 'application/json' } : {}),
    },
    body,
  });
  const text = await response.text();
  const problem = (text.startsWith('{') ? JSON.parse(text) : {}) as Omit<Problem, 'status'>;
  return { ...problem, status: response.status };
}

/** Calls an operation's tool over MCP; its problem with the HTTP status it stands for. */
async function overMcp(
  mcp: Client,
  operation: Operation,
  input: Record<string, unknown>,
): Promise<Problem> {
  const binding = resolveBinding(operation.method, operation.binding);
  const result = (await mcp.callTool({
    name: operation.name,
    arguments: { ...input, ...(binding.body.kind === 'bytes' ? { content: '' } : {}) },
  })) as { isError?: boolean; content: { text?: string }[] };
  if (!result.isError) return { status: 200 };
  return JSON.parse(result.content[0]?.text ?? '{}') as Problem;
}

/** Every (operation, field) pair of the table whose field can hold text (the rest made valid). */
function nulCases(text = NUL_TEXT) {
  return OPERATION_LIST.flatMap((operation) =>
    fieldsOf(operation).flatMap(([name, schema]) => {
      const nul = withNul(schema, text);
      return nul ? [{ operation, name, ...nul }] : [];
    }),
  );
}

/**
 * Whether a field travels in a JSON body over HTTP. Only JSON carries a lone surrogate: in a
 * path or query it is percent-encoded UTF-8, which has no form for it (decoding refuses the
 * bytes, or URLSearchParams makes them U+FFFD).
 */
function inJsonBody(operation: Operation, name: string): boolean {
  const binding = resolveBinding(operation.method, operation.binding);
  return binding.body.kind === 'json' && !pathParameters(operation.path).includes(name);
}

/** Every (operation, field) pair of the table whose field is a whole number. */
function integerCases() {
  return OPERATION_LIST.flatMap((operation) =>
    fieldsOf(operation)
      .filter(([, schema]) => types(schema).includes('integer'))
      .map(([name]) => ({ operation, name })),
  );
}

/** What the table expects: NUL in the file path is `invalid_path`, elsewhere `invalid_input`. */
function expectedNul(operation: Operation, name: string, below: (string | number)[]) {
  return name === restParameter(operation.path)
    ? { status: 400, code: 'invalid_path', field: name }
    : { status: 400, code: 'invalid_input', field: [name, ...below].join('.') };
}

/** The same, for a lone surrogate: the file path names the rule `not_utf8`, text `lone_surrogate`. */
function expectedSurrogate(operation: Operation, name: string, below: (string | number)[]) {
  return name === restParameter(operation.path)
    ? { status: 400, code: 'invalid_path', field: name, rule: 'not_utf8' }
    : {
        status: 400,
        code: 'invalid_input',
        field: [name, ...below].join('.'),
        rule: 'lone_surrogate',
      };
}

function seen(problem: Problem) {
  return { status: problem.status, code: problem.code, field: problem.field };
}

test('the table reaches every operation that takes text or a whole number', () => {
  const reached = new Set([...nulCases(), ...integerCases()].map((each) => each.operation.name));
  // An operation whose fields hold neither text nor a whole number (none, only a boolean:
  // set_mail_push, or only a fractional number: rotate_token) has nothing for the table to reach.
  const takesNeither = OPERATION_LIST.filter((operation) =>
    fieldsOf(operation).every(([, schema]) =>
      types(schema).every((type) => type === 'boolean' || type === 'number'),
    ),
  );
  assert.is(reached.size + takesNeither.length, OPERATION_LIST.length);
  assert.ok(integerCases().some((each) => each.name === 'version'));
});

test('NUL in any text field of any operation answers 400 naming the field, over HTTP', async ({
  server,
  operator,
}) => {
  const wrong: string[] = [];
  for (const { operation, name, value, below } of nulCases()) {
    const answer = await overHttp(server, operator, operation, {
      ...validInput(operation),
      [name]: value,
    });
    const expected = expectedNul(operation, name, below);
    if (JSON.stringify(seen(answer)) !== JSON.stringify(expected))
      wrong.push(`${operation.name}.${name}: ${JSON.stringify(seen(answer))}`);
  }
  assert.equal(wrong, []);
});

test('NUL in any text field of any operation answers invalid_input naming the field, over MCP', async ({
  mcp,
}) => {
  const wrong: string[] = [];
  for (const { operation, name, value, below } of nulCases()) {
    const answer = await overMcp(mcp, operation, { ...validInput(operation), [name]: value });
    const expected = expectedNul(operation, name, below);
    if (JSON.stringify(seen(answer)) !== JSON.stringify(expected))
      wrong.push(`${operation.name}.${name}: ${JSON.stringify(seen(answer))}`);
  }
  assert.equal(wrong, []);
});

test('a lone surrogate in any text field of any operation answers 400 naming the field, over HTTP (JSON bodies) and MCP', async ({
  server,
  operator,
  mcp,
}) => {
  const wrong: string[] = [];
  let overHttpCount = 0;
  for (const { operation, name, value, below } of nulCases(LONE_SURROGATE)) {
    const input = { ...validInput(operation), [name]: value };
    const expected = expectedSurrogate(operation, name, below);
    const answers: [string, Problem][] = [['mcp', await overMcp(mcp, operation, input)]];
    if (inJsonBody(operation, name)) {
      overHttpCount++;
      answers.push(['http', await overHttp(server, operator, operation, input)]);
    }
    for (const [door, answer] of answers) {
      const got = { ...seen(answer), rule: answer.rule };
      if (JSON.stringify(got) !== JSON.stringify(expected))
        wrong.push(`${door} ${operation.name}.${name}: ${JSON.stringify(got)}`);
    }
  }
  assert.equal(wrong, []);
  // The fields the finding named travel in JSON bodies, so HTTP is reached too.
  assert.ok(overHttpCount > 20, `only ${overHttpCount} fields reached over HTTP`);
});

test('a whole number past the database range in any integer field answers 400 invalid_input, over HTTP and MCP', async ({
  server,
  operator,
  mcp,
}) => {
  const wrong: string[] = [];
  for (const { operation, name } of integerCases()) {
    const input = { ...validInput(operation), [name]: HUGE };
    const expected = { status: 400, code: 'invalid_input', field: name };
    for (const [door, answer] of [
      ['http', await overHttp(server, operator, operation, input)],
      ['mcp', await overMcp(mcp, operation, input)],
    ] as const) {
      if (JSON.stringify(seen(answer)) !== JSON.stringify(expected))
        wrong.push(`${door} ${operation.name}.${name}: ${JSON.stringify(seen(answer))}`);
    }
  }
  assert.equal(wrong, []);
});

test('the addresses of the report answer 400 invalid_input naming the field', async ({
  server,
  operator,
  workspaceId,
}) => {
  const cases: [string, string][] = [
    ['/store?q=%00', 'q'],
    ['/conventions/%00', 'name'],
    [`/workspaces/${workspaceId}/files?prefix=%00`, 'prefix'],
    [`/workspaces/${workspaceId}/receipts?path=%00`, 'path'],
    [`/workspaces/${workspaceId}/files/notes.md?version=99999999999`, 'version'],
  ];
  for (const [path, field] of cases) {
    const answer = await callJson<Problem>(server, 'GET', path, operator);
    assert.equal(
      { status: answer.status, code: answer.body.code, field: answer.body.field },
      { status: 400, code: 'invalid_input', field },
      path,
    );
  }
});

test('a backslash in a file path is refused as invalid_path over HTTP, MCP and storage links', async ({
  server,
  operator,
  mcp,
  workspaceId,
}) => {
  for (const encoded of ['a%5C..%5Cb', 'a%5Cb.md', 'dir/%EF%BC%BCb.md']) {
    const put = await fetch(server.url(`/workspaces/${workspaceId}/files/${encoded}`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${operator}` },
      body: 'x',
    });
    const problem = (await put.json()) as Problem;
    assert.equal([put.status, problem.code, problem.rule], [400, 'invalid_path', 'backslash']);
  }
  const overMcpTool = await overMcp(
    mcp,
    OPERATION_LIST.find((op) => op.name === 'write_file')!,
    {
      workspace_id: workspaceId,
      path: 'a\\..\\b',
    },
  );
  assert.equal([overMcpTool.code, overMcpTool.rule], ['invalid_path', 'backslash']);
  const link = await callJson<{ container_url: string; sas_token: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/sas`,
    operator,
    { access: 'read' },
  );
  assert.is(link.status, 200);
  const read = await fetch(`${link.body.container_url}/a%5C..%5Cb?${link.body.sas_token}`);
  assert.is(read.status, 400);
  assert.is(read.headers.get('x-ms-error-code'), 'InvalidResourceName');
  const files = await callJson<{ files: unknown[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/files`,
    operator,
  );
  assert.equal(files.body.files, [], 'nothing was saved');
});

test('MCP refuses a __proto__, constructor or prototype argument as HTTP does: unknown_field', async ({
  server,
  operator,
  mcp,
}) => {
  for (const key of ['__proto__', 'constructor', 'prototype']) {
    const body = `{"message":"hello","category":"idea","${key}":{"category":"bug"}}`;
    const overHttpDoor = await fetch(server.url('/feedback'), {
      method: 'POST',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body,
    });
    const httpProblem = (await overHttpDoor.json()) as Problem & { fields?: string[] };
    assert.equal(
      [overHttpDoor.status, httpProblem.code, httpProblem.fields],
      [400, 'unknown_field', [key]],
    );
    const rpc = await fetch(server.url('/mcp'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${operator}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"leave_feedback","arguments":${body}}}`,
    });
    const answer = (await rpc.json()) as {
      result: { isError?: boolean; content: { text: string }[] };
    };
    assert.ok(answer.result.isError, `${key} over MCP is refused`);
    const mcpProblem = JSON.parse(answer.result.content[0]?.text ?? '{}') as Problem & {
      fields?: string[];
    };
    assert.equal([mcpProblem.code, mcpProblem.fields], ['unknown_field', [key]]);
  }
  // Below the top level, in a record of free keys, the same keys are refused on both doors.
  const listing = { kind: 'can', dimensions: JSON.parse('{"__proto__": {"price": "free"}}') };
  const overHttpDoor = await callJson<Problem>(server, 'POST', '/listings', operator, listing);
  assert.equal(
    [overHttpDoor.status, overHttpDoor.body.code, overHttpDoor.body.field],
    [400, 'invalid_input', 'dimensions.__proto__'],
  );
  const tool = OPERATION_LIST.find((op) => op.name === 'post_listing')!;
  const overMcpDoor = await overMcp(mcp, tool, listing);
  assert.equal([overMcpDoor.code, overMcpDoor.field], ['invalid_input', 'dimensions.__proto__']);
});

test('arguments nested 20,000 deep answer 400 invalid_input on MCP and on HTTP, also with an Idempotency-Key', async ({
  server,
  operator,
}) => {
  const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
  const rpc = await fetch(server.url('/mcp'), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${operator}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"leave_feedback","arguments":{"message":"x","category":"bug","extra":${deep(20_000)}}}}`,
  });
  assert.is(rpc.status, 400);
  const refused = (await rpc.json()) as { error: { data: Problem } };
  assert.is(refused.error.data.code, 'invalid_input');
  // Just past the bound, inside a batch's budget: the tool answers with the field.
  const justPast = await fetch(server.url('/mcp'), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${operator}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_index","arguments":{"sql":"select 1","params":${deep(64)}}}}`,
  });
  const tool = (await justPast.json()) as {
    result: { isError?: boolean; content: { text: string }[] };
  };
  assert.ok(tool.result.isError);
  const problem = JSON.parse(tool.result.content[0]?.text ?? '{}') as Problem;
  assert.equal([problem.status, problem.code, problem.field], [400, 'invalid_input', 'params']);
  // HTTP: 20,000 levels fit in a 64 KiB body; hashing it for the key must not be what fails.
  for (const key of [undefined, randomUUID()]) {
    const response = await fetch(server.url('/listings'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${operator}`,
        'content-type': 'application/json',
        ...(key ? { 'idempotency-key': key } : {}),
      },
      body: `{"kind":"can","dimensions":{"a":${deep(20_000)}}}`,
    });
    const problem = (await response.json()) as Problem;
    assert.equal(
      [response.status, problem.code, problem.field],
      [400, 'invalid_input', 'dimensions'],
    );
  }
});

test.run();
