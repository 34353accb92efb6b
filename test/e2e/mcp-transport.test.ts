import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { ToolTable } from '../../server/mcp/tools.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { within } from '../helpers/turns.ts';

/** What MCP clients meet at /mcp over plain HTTP: methods, Accept, JSON-RPC codes, size, aborts. */
const test = suite<{ server: TestServer }>('the /mcp door over HTTP');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

const BOTH = 'application/json, text/event-stream';
const rpc = (id: number | string, method: string, params?: unknown) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params === undefined ? {} : { params }),
});
const initialize = (id: number) =>
  rpc(id, 'initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'raw-test', version: '1.0.0' },
  });

type RpcBody = {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: { code?: string } };
};

/** POSTs to /mcp; a test that finds no answer fails after 5 s rather than hanging. */
async function post(
  server: TestServer,
  body: unknown,
  headers: Record<string, string | undefined> = {},
): Promise<{ status: number; headers: Headers; json: RpcBody }> {
  const sent: Record<string, string> = {};
  for (const [name, value] of Object.entries({
    accept: BOTH,
    'content-type': 'application/json',
    ...headers,
  })) {
    if (value !== undefined) sent[name] = value;
  }
  const response = await fetch(server.url('/mcp'), {
    method: 'POST',
    headers: sent,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    json: (text ? JSON.parse(text) : {}) as RpcBody,
  };
}

test('GET /mcp (an event-stream request) answers 405 at once, naming POST', async ({ server }) => {
  const response = await fetch(server.url('/mcp'), {
    headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    signal: AbortSignal.timeout(5000),
  });
  assert.is(response.status, 405);
  assert.match(response.headers.get('allow') ?? '', /\bPOST\b/);
  const body = (await response.json()) as RpcBody;
  assert.is(typeof body.error?.code, 'number');
  assert.is(body.error?.data?.code, 'method_not_allowed');
});

test('DELETE /mcp answers 405 too: a stateless server has no session to end', async ({
  server,
}) => {
  const response = await fetch(server.url('/mcp'), {
    method: 'DELETE',
    headers: { 'mcp-session-id': 'no-such-session' },
    signal: AbortSignal.timeout(5000),
  });
  await response.arrayBuffer();
  assert.is(response.status, 405);
});

test('the SDK client connects, lists and closes without a stream left open', async ({ server }) => {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url('/mcp'))));
  assert.ok((await client.listTools()).tools.length > 0);
  await within(client.close(), 5000, 'the client closes');
});

test('a client that goes away mid-call ends the call: the long-poll it started lets go', async ({
  server,
}) => {
  const agent = await server.signUp();
  // Read the welcome first, so that the wait parks.
  await server.get('/changes', agent.api_token);
  const hub = server.services.hub;
  const subscribe = hub.subscribe.bind(hub);
  let parked!: () => void;
  let released!: () => void;
  const waiting = new Promise<void>((resolve) => (parked = resolve));
  const gone = new Promise<void>((resolve) => (released = resolve));
  hub.subscribe = (agentId, listener) => {
    const stop = subscribe(agentId, listener);
    if (agentId !== agent.agent_id) return stop;
    parked();
    return () => {
      stop();
      released();
    };
  };
  try {
    const controller = new AbortController();
    const call = fetch(server.url('/mcp'), {
      method: 'POST',
      headers: {
        accept: BOTH,
        'content-type': 'application/json',
        authorization: `Bearer ${agent.api_token}`,
      },
      body: JSON.stringify(
        rpc(1, 'tools/call', { name: 'wait_for_changes', arguments: { timeout: 60 } }),
      ),
      signal: controller.signal,
    }).then(
      () => 'answered',
      () => 'aborted',
    );
    await within(waiting, 5000, 'the call parks a waiter');
    controller.abort();
    assert.is(await call, 'aborted');
    await within(gone, 5000, 'the waiter is released once the client has gone');
    assert.is(hub.listenerCount(agent.agent_id), 0);
  } finally {
    hub.subscribe = subscribe;
  }
});

test('a client accepting JSON alone, anything, or not saying, is answered JSON', async ({
  server,
}) => {
  for (const accept of [BOTH, 'application/json', '*/*', 'application/*;q=0.5', undefined]) {
    const answer = await post(server, rpc(1, 'ping'), { accept });
    assert.is(answer.status, 200, `Accept: ${accept}`);
    assert.equal(answer.json.result, {});
    assert.match(answer.headers.get('content-type') ?? '', /application\/json/);
  }
});

test('a client that accepts no JSON is refused with 406', async ({ server }) => {
  for (const accept of ['text/html', 'text/event-stream', 'application/json;q=0']) {
    const answer = await post(server, rpc(1, 'ping'), { accept });
    assert.is(answer.status, 406, `Accept: ${accept}`);
  }
});

test('malformed JSON is -32700; JSON that is no JSON-RPC message is -32600', async ({ server }) => {
  const malformed = await post(server, '{"jsonrpc":"2.0",');
  assert.is(malformed.status, 400);
  assert.is(malformed.json.error?.code, -32700);
  const noMethod = await post(server, { jsonrpc: '2.0', id: 5 });
  assert.is(noMethod.status, 400);
  assert.is(noMethod.json.error?.code, -32600);
  assert.is(noMethod.json.id, 5);
  const notAnObject = await post(server, '"ping"');
  assert.is(notAnObject.json.error?.code, -32600);
  assert.is(notAnObject.json.id, null);
});

test('params that do not fit the method are -32602, answered with the request id', async ({
  server,
}) => {
  for (const [id, body] of [
    [9, rpc(9, 'tools/call', {})],
    [10, rpc(10, 'initialize')],
    ['x', rpc('x', 'tools/call', { name: 42 })],
  ] as const) {
    const answer = await post(server, body);
    assert.is(answer.json.error?.code, -32602, JSON.stringify(body));
    assert.is(answer.json.id, id);
  }
  const unknownTool = await post(server, rpc(13, 'tools/call', { name: 'no_such_tool' }));
  assert.is(unknownTool.json.error?.code, -32602);
  // A batch still works, and a bad member is answered on its own.
  const batch = await post(server, [rpc(1, 'ping'), rpc(2, 'tools/call', {})]);
  const answers = batch.json as unknown as RpcBody[];
  assert.equal(answers.find((a) => a.id === 1)?.result, {});
  assert.is(answers.find((a) => a.id === 2)?.error?.code, -32602);
});

test('a body larger than the largest tool needs is refused with 413; a smaller one reaches the tool', async ({
  server,
}) => {
  const limit = new ToolTable(OPERATION_LIST).bodyLimit;
  const call = (size: number) => {
    const body = rpc(1, 'tools/call', {
      name: 'leave_feedback',
      arguments: { message: '', category: 'bug' },
    });
    const envelope = JSON.stringify(body).length;
    body.params = {
      name: 'leave_feedback',
      arguments: { message: 'x'.repeat(size - envelope), category: 'bug' },
    };
    return JSON.stringify(body);
  };
  const over = await post(server, call(limit + 1));
  assert.is(over.status, 413);
  assert.is(over.json.error?.data?.code, 'payload_too_large');
  // Within the door's limit but past leave_feedback's own: the tool answers, not the door.
  const under = await post(server, call(limit));
  assert.is(under.status, 200);
  assert.ok(under.json.result?.isError);
  assert.match(JSON.stringify(under.json.result), /payload_too_large/);
});

test('a request from a foreign page (Origin) is refused with 403 and a JSON-RPC error', async ({
  server,
}) => {
  for (const origin of ['http://evil.example', 'null', 'https://127.0.0.1.evil.example']) {
    const answer = await post(server, initialize(1), { origin });
    assert.is(answer.status, 403, origin);
    assert.is(typeof answer.json.error?.code, 'number');
    assert.is(answer.json.error?.data?.code, 'forbidden');
    assert.is(answer.headers.get('access-control-allow-origin'), null);
  }
});

test("the service's own origin and, on loopback, pages on this machine are admitted with CORS headers", async ({
  server,
}) => {
  const own = new URL(server.baseUrl).origin;
  for (const origin of [own, 'http://localhost:6274', 'http://[::1]:3000']) {
    const answer = await post(server, initialize(1), { origin });
    assert.is(answer.status, 200, origin);
    assert.is(answer.headers.get('access-control-allow-origin'), origin);
    const exposed = answer.headers.get('access-control-expose-headers') ?? '';
    assert.match(exposed, /mcp-session-id/i);
    assert.match(exposed, /www-authenticate/i);
  }
});

test('a CORS preflight to /mcp names the methods and the headers MCP clients send', async ({
  server,
}) => {
  const response = await fetch(server.url('/mcp'), {
    method: 'OPTIONS',
    headers: {
      origin: 'http://localhost:6274',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,authorization,mcp-protocol-version',
    },
    signal: AbortSignal.timeout(5000),
  });
  assert.ok(response.ok, `OPTIONS -> ${response.status}`);
  assert.is(response.headers.get('access-control-allow-origin'), 'http://localhost:6274');
  assert.match(response.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/);
  const allowed = response.headers.get('access-control-allow-headers') ?? '';
  for (const header of [
    'authorization',
    'content-type',
    'mcp-protocol-version',
    'mcp-session-id',
    'last-event-id',
    'idempotency-key',
  ]) {
    assert.ok(allowed.split(/,\s*/).includes(header), header);
  }
  const foreign = await fetch(server.url('/mcp'), {
    method: 'OPTIONS',
    headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    signal: AbortSignal.timeout(5000),
  });
  await foreign.arrayBuffer();
  assert.is(foreign.status, 403);
  assert.is(foreign.headers.get('access-control-allow-origin'), null);
});

test('the public documents may be read from any page, preflight included', async ({ server }) => {
  for (const path of ['/llms.txt', '/protocol', '/openapi.json']) {
    const response = await fetch(server.url(path), { headers: { origin: 'https://any.example' } });
    await response.arrayBuffer();
    assert.is(response.status, 200, path);
    assert.is(response.headers.get('access-control-allow-origin'), '*', path);
    const preflight = await fetch(server.url(path), {
      method: 'OPTIONS',
      headers: { origin: 'https://any.example', 'access-control-request-method': 'GET' },
    });
    await preflight.arrayBuffer();
    assert.is(preflight.status, 204, `OPTIONS ${path}`);
    assert.is(preflight.headers.get('access-control-allow-origin'), '*');
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /\bGET\b/);
  }
});

test.run();
