import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { io as connect, type Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { addKey, newKey, signedHeaders, signedJson, type AgentKey } from '../helpers/signatures.ts';

/**
 * The signature policy on each door that writes besides plain HTTP: MCP (its POSTs signed through
 * the SDK's own client), socket.io (a handshake signed over its challenge), storage links, byte
 * bodies checked against their digest as they stream.
 */
const test = serverSuite('signed requests at every door that writes');

interface Agent {
  agent_id: string;
  api_token: string;
  key: AgentKey;
}

async function policyAgent(server: TestServer): Promise<Agent> {
  const agent = await server.signUp();
  const key = newKey();
  await addKey(server, agent.api_token, key);
  const set = await signedJson(server, key, 'PUT', '/whoami/signature-policy', agent.api_token, {
    require_signature: true,
  });
  assert.is(set.status, 200, JSON.stringify(set.body));
  return { ...agent, key };
}

/** An agent that requires signatures, and a workspace it made by a signed request. */
async function policyWorkspace(server: TestServer): Promise<{ agent: Agent; workspaceId: string }> {
  const agent = await policyAgent(server);
  const made = await signedJson<{ workspace_id: string }>(
    server,
    agent.key,
    'POST',
    '/workspaces',
    agent.api_token,
    { name: 'signed' },
  );
  assert.is(made.status, 201, JSON.stringify(made.body));
  return { agent, workspaceId: made.body.workspace_id };
}

/** An MCP client of the SDK whose every POST is signed with `key` when given. */
async function mcp(server: TestServer, token: string, key?: AgentKey): Promise<Client> {
  const signingFetch = async (input: string | URL | Request, init?: RequestInit) => {
    if (!key || (init?.method ?? 'GET') !== 'POST') return fetch(input, init);
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const signed = await signedHeaders(key, 'POST', String(input), headers, body);
    return fetch(input, { ...init, headers: signed });
  };
  const client = new Client({ name: 'signed-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: signingFetch,
    }),
  );
  return client;
}

test('MCP: under the policy an unsigned tool call that writes is refused; a signed POST writes', async ({
  server,
}) => {
  const agent = await policyAgent(server);
  const unsigned = await mcp(server, agent.api_token);
  try {
    const read = await callTool(unsigned, 'whoami');
    assert.not.ok(read.isError, JSON.stringify(read));
    const refused = await callTool(unsigned, 'create_workspace', { name: 'm' });
    assert.ok(refused.isError);
    assert.is(toolProblem(refused).code, 'signature_required');
  } finally {
    await unsigned.close();
  }
  const signed = await mcp(server, agent.api_token, agent.key);
  try {
    const made = await callTool(signed, 'create_workspace', { name: 'm' });
    assert.not.ok(made.isError, JSON.stringify(made));
  } finally {
    await signed.close();
  }
});

test('MCP: a POST whose body changed after signing is refused whole', async ({ server }) => {
  const agent = await policyAgent(server);
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'create_workspace', arguments: { name: 'a' } },
  });
  const headers = await signedHeaders(
    agent.key,
    'POST',
    server.url('/mcp'),
    {
      authorization: `Bearer ${agent.api_token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body,
  );
  const tampered = await fetch(server.url('/mcp'), {
    method: 'POST',
    headers,
    body: body.replace('"a"', '"b"'),
  });
  assert.is(tampered.status, 401);
  const answer = (await tampered.json()) as { error: { data: { reason: string } } };
  assert.is(answer.error.data.reason, 'content_digest');
});

/** A socket whose handshake is signed with `key` over its challenge (engine.io's session id). */
function signedSocket(
  server: TestServer,
  token: string,
  key: AgentKey | null,
  challenge?: (real: string) => string,
): Socket {
  const socket: Socket = connect(server.baseUrl, {
    transports: ['websocket'],
    reconnection: false,
    auth: (callback) => {
      if (!key) return callback({ token });
      const real = socket.io.engine.id as string;
      void signedHeaders(
        key,
        'GET',
        `${server.baseUrl}/socket.io/`,
        { 'socket-challenge': challenge ? challenge(real) : real },
        undefined,
        { fields: ['@method', '@authority', '@path', 'socket-challenge'] },
      ).then((headers) => {
        const named = (name: string) =>
          Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
        callback({
          token,
          signature_input: named('signature-input'),
          signature: named('signature'),
        });
      });
    },
  });
  return socket;
}

function connected(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (error) => reject(error));
  });
}

function refusedWith(socket: Socket): Promise<{ code: string; reason?: string }> {
  return new Promise((resolve, reject) => {
    socket.once('connect', () => reject(new Error('connected')));
    socket.once('connect_error', (error) =>
      resolve((error as Error & { data: { code: string; reason?: string } }).data),
    );
  });
}

function ack(socket: Socket): Promise<{ cursor?: string; error?: { code: string } }> {
  return new Promise((resolve) => socket.emit('ack', { cursor: 'c' }, resolve));
}

test('socket.io: an unsigned connection reads but its ack is refused; a signed handshake acks', async ({
  server,
}) => {
  const agent = await policyAgent(server);
  const unsigned = signedSocket(server, agent.api_token, null);
  try {
    await connected(unsigned);
    const refused = await ack(unsigned);
    assert.is(refused.error?.code, 'signature_required');
  } finally {
    unsigned.disconnect();
  }
  const signed = signedSocket(server, agent.api_token, agent.key);
  try {
    await connected(signed);
    const answer = await ack(signed);
    // The cursor is not one of the feed's: refused for that, not for want of a signature.
    assert.is.not(answer.error?.code, 'signature_required', JSON.stringify(answer));
    assert.is.not(answer.error?.code, 'invalid_signature', JSON.stringify(answer));
    // The key that signed the handshake revoked (a spare keeps the policy possible): no more acks.
    const spare = newKey();
    const added = await signedJson(server, agent.key, 'POST', '/whoami/keys', agent.api_token, {
      jwk: spare.jwk,
    });
    assert.is(added.status, 201, JSON.stringify(added.body));
    const revoked = await signedJson(
      server,
      agent.key,
      'DELETE',
      `/whoami/keys/${agent.key.keyId}`,
      agent.api_token,
    );
    assert.is(revoked.status, 200, JSON.stringify(revoked.body));
    const afterRevoke = await ack(signed);
    assert.is(afterRevoke.error?.code, 'invalid_signature', JSON.stringify(afterRevoke));
  } finally {
    signed.disconnect();
  }
});

test('socket.io: a handshake signed over another challenge, or by another agent\u2019s key, is refused', async ({
  server,
}) => {
  const agent = await policyAgent(server);
  const replayed = signedSocket(server, agent.api_token, agent.key, () => 'an-older-session-id');
  try {
    const problem = await refusedWith(replayed);
    assert.is(problem.code, 'invalid_signature');
    assert.is(problem.reason, 'signature');
  } finally {
    replayed.disconnect();
  }
  const mallory = await policyAgent(server);
  const stolen = signedSocket(server, agent.api_token, mallory.key);
  try {
    const problem = await refusedWith(stolen);
    assert.is(problem.reason, 'agent_mismatch');
  } finally {
    stolen.disconnect();
  }
});

test('storage links: under the policy only a signed request mints one, of any access', async ({
  server,
}) => {
  const { agent, workspaceId } = await policyWorkspace(server);
  const path = `/workspaces/${workspaceId}/sas`;
  for (const access of ['read', 'readwrite']) {
    const unsigned = await callJson(server, 'POST', path, agent.api_token, { access });
    assert.is(unsigned.status, 401, `${access}: ${JSON.stringify(unsigned.body)}`);
    assert.is(unsigned.body.code, 'signature_required');
    const signed = await signedJson(server, agent.key, 'POST', path, agent.api_token, { access });
    assert.is(signed.status, 200, `${access}: ${JSON.stringify(signed.body)}`);
  }
});

test('a byte body that does not hash to its signed digest writes nothing', async ({ server }) => {
  const { agent, workspaceId } = await policyWorkspace(server);
  const url = server.url(`/workspaces/${workspaceId}/files/notes.txt`);
  const signedFor = 'the bytes that were signed';
  const headers = await signedHeaders(
    agent.key,
    'PUT',
    url,
    { authorization: `Bearer ${agent.api_token}`, 'content-type': 'text/plain' },
    signedFor,
  );
  const changed = await fetch(url, { method: 'PUT', headers, body: 'other bytes, same length!!' });
  assert.is(changed.status, 401);
  assert.is(((await changed.json()) as { reason: string }).reason, 'content_digest');
  const read = await fetch(url, { headers: { authorization: `Bearer ${agent.api_token}` } });
  assert.is(read.status, 404, 'nothing was written');
  // Signed again: the refused request's nonce was taken (a nonce is taken once, whatever came of it).
  const again = await signedHeaders(
    agent.key,
    'PUT',
    url,
    { authorization: `Bearer ${agent.api_token}`, 'content-type': 'text/plain' },
    signedFor,
  );
  const good = await fetch(url, { method: 'PUT', headers: again, body: signedFor });
  assert.is(good.status, 201, await good.text());
  const written = await fetch(url, { headers: { authorization: `Bearer ${agent.api_token}` } });
  assert.is(await written.text(), signedFor);
});

test.run();
