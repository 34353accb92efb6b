import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ server: TestServer; token: string }>('arbitrary input never breaks a door');

test.before(async (context) => {
  context.server = await startTestServer();
  context.token = (await context.server.signUp('fuzz target')).api_token;
});
test.after(async ({ server }) => {
  await server.close();
});

/** A path for an operation with its parameters filled by arbitrary text. */
const pathOf = (template: string, value: string) =>
  template.replace(/:([a-z_]+)/g, () => encodeURIComponent(value));

const RUNS = 60;

test('arbitrary JSON bodies get a 2xx or a problem+json 4xx, never a 5xx', async ({
  server,
  token,
}) => {
  const writes = OPERATION_LIST.filter((op) => op.method === 'POST' || op.method === 'PUT');
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...writes),
      fc.jsonValue(),
      fc.string(),
      fc.boolean(),
      async (operation, body, segment, withToken) => {
        const response = await fetch(server.url(pathOf(operation.path, segment)), {
          method: operation.method,
          headers: {
            'content-type': 'application/json',
            ...(withToken ? { authorization: `Bearer ${token}` } : {}),
          },
          body: JSON.stringify(body),
        });
        const text = await response.text();
        assert.ok(response.status < 500, `${operation.name} answered ${response.status}: ${text}`);
        if (response.status >= 400) {
          assert.is(response.headers.get('content-type'), 'application/problem+json');
          assert.type((JSON.parse(text) as { code: unknown }).code, 'string');
        }
      },
    ),
    { numRuns: RUNS },
  );
});

test('arbitrary query strings and raw bytes get a clear answer, never a 5xx', async ({
  server,
  token,
}) => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...OPERATION_LIST),
      fc.dictionary(fc.string({ maxLength: 12 }), fc.string({ maxLength: 40 })),
      fc.uint8Array({ maxLength: 300 }),
      async (operation, query, bytes) => {
        // A long-poll with nothing new would wait its full time: ask it not to.
        const waits = operation.name === 'wait_for_changes' && !('timeout' in query);
        const search = new URLSearchParams(waits ? { ...query, timeout: '0' } : query).toString();
        const takesBody = operation.method === 'POST' || operation.method === 'PUT';
        const response = await fetch(server.url(`${pathOf(operation.path, 'x')}?${search}`), {
          method: operation.method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          ...(takesBody ? { body: bytes } : {}),
        });
        await response.arrayBuffer();
        assert.ok(response.status < 500, `${operation.name} answered ${response.status}`);
      },
    ),
    { numRuns: RUNS },
  );
});

test('arbitrary JSON-RPC at /mcp gets an answer, never a 5xx', async ({ server, token }) => {
  const toolCall = fc.record({
    jsonrpc: fc.constant('2.0'),
    id: fc.oneof(fc.integer(), fc.string()),
    method: fc.constant('tools/call'),
    params: fc.record({
      // wait_for_changes is left out: with empty arguments it would wait its full 30 s.
      name: fc.constantFrom(
        ...OPERATION_LIST.filter((op) => op.name !== 'wait_for_changes').map((op) => op.name),
        'nope',
      ),
      arguments: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue()),
    }),
  });
  await fc.assert(
    fc.asyncProperty(fc.oneof(toolCall, fc.jsonValue()), async (message) => {
      const response = await fetch(server.url('/mcp'), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify(message),
      });
      const text = await response.text();
      assert.ok(response.status < 500, `/mcp answered ${response.status}: ${text}`);
    }),
    { numRuns: RUNS },
  );
});

test.run();
