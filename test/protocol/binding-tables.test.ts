import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { resolveBinding } from '../../protocol/binding.ts';
import { ERRORS, ServiceError, type ErrorCode } from '../../protocol/errors.ts';
import { defineOperation, type Operation } from '../../protocol/operation.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { run, type AnyHandler } from '../../server/invoke.ts';
import { capturingStderr } from '../helpers/captured-stderr.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ strict: TestServer; lenient: TestServer }>(
  "the protocol's tables bind: declared error codes and event data",
);

test.before(async (context) => {
  context.strict = await startTestServer();
  context.lenient = await startTestServer({ strictProtocol: false });
});
test.after(async ({ strict, lenient }) => {
  await Promise.all([strict.close(), lenient.close()]);
});

/** Codes every route may answer, whatever its handler does: the doors' and the kernel's. */
function codesEveryRouteAnswers(operation: Operation): ErrorCode[] {
  const binding = resolveBinding(operation.method, operation.binding);
  const writes = operation.readOnly !== true;
  const keyed =
    writes &&
    (operation.method === 'POST' || operation.method === 'PUT') &&
    operation.mintsSecret !== true &&
    binding.body.kind !== 'bytes' &&
    binding.reply.kind !== 'bytes';
  return [
    'invalid_input',
    'unknown_field',
    'unauthorized',
    'rate_limited',
    'payload_too_large',
    'internal_error',
    'service_unavailable',
    'storage_unavailable',
    ...(binding.body.kind === 'json' ? (['invalid_json', 'unsupported_media_type'] as const) : []),
    ...(writes ? (['conflict'] as const) : []),
    ...(keyed ? (['idempotency_key_in_use', 'idempotency_key_reused'] as const) : []),
  ];
}

test('/openapi.json lists, for each operation, every code the doors and the kernel may answer', async ({
  strict,
}) => {
  const document = (await (await strict.get('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
  };
  for (const operation of OPERATION_LIST) {
    if (operation.operatorOnly) continue;
    const path = operation.path.replace(/[:*]([a-z_]+)/g, '{$1}');
    const entry = document.paths[path]?.[operation.method.toLowerCase()];
    assert.ok(entry, `${operation.name} is in /openapi.json`);
    for (const code of [...codesEveryRouteAnswers(operation), ...operation.errors]) {
      const listed = entry.responses[String(ERRORS[code].status)]?.description.split(', ') ?? [];
      assert.ok(listed.includes(code), `${operation.name} lists ${code}`);
    }
  }
});

/** An operation of this test's own, which throws the code it is asked to. */
const refuse = defineOperation({
  name: 'test_refuse',
  method: 'POST',
  path: '/test/refuse',
  auth: 'none',
  status: 200,
  summary: 'Throws the code it is given.',
  description: 'Throws the code it is given.',
  input: z.strictObject({ code: z.string() }),
  output: z.object({}),
  errors: ['not_found'],
});

const throwsCode: AnyHandler = async (_call, input) => {
  throw new ServiceError((input as { code: ErrorCode }).code, 'Refused on request.');
};

async function refusal(server: TestServer, code: ErrorCode): Promise<ServiceError> {
  const signal = new AbortController().signal;
  try {
    await run(server.services, refuse, null, { code }, { signal }, throwsCode);
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
  throw new Error('the handler did not throw');
}

test('in a strict service, a code the operation does not declare answers 500 naming it', async ({
  strict,
}) => {
  const { result: error, written } = await capturingStderr(() => refusal(strict, 'quota_exceeded'));
  // Reported on stderr too (the test servers' log is silent): once, here, not in the run's output.
  assert.match(written, /^strictProtocol: test_refuse answered `quota_exceeded`.*\n$/);
  assert.is(error.code, 'internal_error');
  assert.is(error.extra.undeclared_code, 'quota_exceeded');
  assert.match(error.message, /test_refuse answered `quota_exceeded`/);
});

test('in a strict service, declared codes and common ones pass as they are', async ({ strict }) => {
  assert.is((await refusal(strict, 'not_found')).code, 'not_found');
  assert.is((await refusal(strict, 'conflict')).code, 'conflict');
  assert.is((await refusal(strict, 'storage_unavailable')).code, 'storage_unavailable');
});

test('without strictProtocol (production), an undeclared code passes as it is', async ({
  lenient,
}) => {
  assert.is((await refusal(lenient, 'quota_exceeded')).code, 'quota_exceeded');
});

/** Records one change for `agentId` through the write path; resolves to what it answered. */
function record(server: TestServer, agentId: string, data: Record<string, unknown>) {
  return server.services.commit(async () => ({
    result: 'recorded',
    changes: [{ agentId, type: 'workspace.left', data }],
  }));
}

async function feedTypes(server: TestServer, token: string): Promise<string[]> {
  const page = (await (await server.get('/changes', token)).json()) as {
    changes: { type: string; data: unknown }[];
  };
  return page.changes.map((change) => change.type);
}

test('in a strict service, a change whose data its schema refuses fails the write and is never recorded', async ({
  strict,
}) => {
  const agent = await strict.signUp();
  const wrong = { agent_id: agent.agent_id, name: agent.name, note: 'undeclared' };
  const { result: error, written } = await capturingStderr(() =>
    record(strict, agent.agent_id, wrong).then(
      () => null,
      (refused: Error) => refused,
    ),
  );
  assert.ok(error, 'the write was refused');
  assert.match(error.message, /workspace\.left change whose data.*note/);
  // Reported on stderr too (a job's refusal reaches no caller): once, here, not in the run's output.
  assert.match(written, /^strictProtocol: a workspace\.left change whose data.*note.*\n$/);
  assert.is(
    await record(strict, agent.agent_id, { agent_id: agent.agent_id, name: 'x' }),
    'recorded',
  );
  assert.equal(await feedTypes(strict, agent.api_token), ['agent.welcome', 'workspace.left']);
});

test('without strictProtocol (production), event data is recorded unchecked', async ({
  lenient,
}) => {
  const agent = await lenient.signUp();
  assert.is(await record(lenient, agent.agent_id, { anything: true }), 'recorded');
  assert.equal(await feedTypes(lenient, agent.api_token), ['agent.welcome', 'workspace.left']);
});

test.run();
