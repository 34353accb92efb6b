import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { io, type Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { codeBlock, runProgram, type ProgramRun } from '../helpers/document-programs.ts';
import { runPython } from '../helpers/python.ts';
import { clientSuite, type ExternalClient } from '../helpers/real-clients.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The two signers of /protocol#signed-requests, written to files exactly as served and run as
 * programs (node, python3) as a reader who pasted them would, against a real service: each
 * makes a key, adds it, turns require_signature on and writes signed (with a token and without,
 * JSON and a file's bytes under a percent-encoded path); the same agent's token alone is then
 * refused; requests each signer signed that were changed on the way, or sent twice, are refused.
 * The Node signer's module also signs MCP (signedFetch) and a socket.io handshake (signRequest)
 * as the document shows.
 */

/** The first line of each signer's code block in /protocol: how the test finds it. */
const NODE_MARKER = '// sign-request.mjs';
const PYTHON_MARKER = '# sign_request.py';

/** Debian's Python with the cryptography package, which the Python signer needs. */
const PYTHON_CRYPTOGRAPHY: ExternalClient = {
  name: 'Python cryptography',
  probe: ['/usr/bin/python3', '-c', 'import cryptography'],
  debian: 'python3-cryptography',
};

type Run = ProgramRun;

/** One signer as the document gives it: run as a program, or asked to sign one request. */
interface Signer {
  language: 'node' | 'python';
  dir: string;
  /** Runs the signer as a program with `args`, in an environment holding only PATH and `env`. */
  run(args: string[], env: Record<string, string>): Promise<Run>;
  /** The headers the signer's own function makes for one request, with the key in `keyFile`. */
  sign(
    keyFile: string,
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string,
  ): Promise<Record<string, string>>;
}

/** What the Node signer's module exports, as /protocol says. */
interface NodeSignerModule {
  loadKey(file: string): { privateKey: KeyObject; jwk: Record<string, string>; keyId: string };
  signRequest(request: {
    method: string;
    url: string;
    headers?: Record<string, string>;
    body?: string | Uint8Array;
    keyId: string;
    privateKey: KeyObject;
    cover?: string[];
  }): Record<string, string>;
  signedFetch(key: { keyId: string; privateKey: KeyObject }): typeof fetch;
}

/** A fresh directory, removed at the end of the run. */
function scratchDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'signers-from-docs-'));
  onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function nodeSigner(server: TestServer): Promise<Signer & { module: NodeSignerModule }> {
  const protocol = await (await server.get('/protocol')).text();
  const dir = scratchDir();
  const file = join(dir, 'sign-request.mjs');
  writeFileSync(file, codeBlock(protocol, 'js', NODE_MARKER, '/protocol'));
  const module = (await import(pathToFileURL(file).href)) as NodeSignerModule;
  return {
    language: 'node',
    dir,
    module,
    run: (args, env) => runProgram(process.execPath, [file, ...args], env),
    sign(keyFile, method, url, headers, body) {
      const { keyId, privateKey } = module.loadKey(keyFile);
      return Promise.resolve(module.signRequest({ method, url, headers, body, keyId, privateKey }));
    },
  };
}

/** Prints the headers sign_request makes for `[key file, method, url, headers, body]` (argv). */
const PYTHON_SIGN = String.raw`
import json, sys
from sign_request import load_key, sign_request
private_key, _, key_id = load_key(sys.argv[1])
method, url, headers, body = json.loads(sys.argv[2])
print(json.dumps(sign_request(method, url, headers, body, key_id, private_key)))
`;

async function pythonSigner(server: TestServer): Promise<Signer> {
  const protocol = await (await server.get('/protocol')).text();
  const dir = scratchDir();
  const file = join(dir, 'sign_request.py');
  writeFileSync(file, codeBlock(protocol, 'python', PYTHON_MARKER, '/protocol'));
  return {
    language: 'python',
    dir,
    run: (args, env) => runPython([file, ...args], env),
    async sign(keyFile, method, url, headers, body) {
      const request = JSON.stringify([method, url, headers, body]);
      const run = await runPython(['-c', PYTHON_SIGN, keyFile, request], { PYTHONPATH: dir });
      assert.is(run.code, 0, run.stderr);
      return JSON.parse(run.stdout) as Record<string, string>;
    },
  };
}

interface Printed {
  status: number;
  body: Record<string, unknown> & { code?: string; reason?: string };
}

/** Runs the signer as a program; the one JSON line it printed, checked against its exit code. */
async function command(signer: Signer, args: string[], env: Record<string, string>) {
  const run = await signer.run(args, env);
  const what = `${signer.language} ${args.join(' ')}: ${run.stdout}${run.stderr}`;
  const lines = run.stdout.trimEnd().split('\n');
  assert.is(lines.length, 1, what);
  const printed = JSON.parse(lines[0] as string) as Printed;
  assert.is(run.code, printed.status >= 400 ? 1 : 0, `exit code: ${what}`);
  return { ...printed, what };
}

/** The RFC 7638 thumbprint of the public key in a PEM file, computed here, not by the signer. */
function thumbprintOf(keyFile: string): string {
  const { x } = createPublicKey(createPrivateKey(readFileSync(keyFile))).export({
    format: 'jwk',
  }) as { x: string };
  const members = JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x });
  return createHash('sha256').update(members).digest('base64url');
}

/** A fresh agent whose key the signer made and added, with require_signature turned on by it. */
async function agentUnderPolicy(server: TestServer, signer: Signer) {
  const agent = await server.signUp();
  const keyFile = join(signer.dir, `key-${agent.agent_id}.pem`);
  const env = { SERVICE_URL: server.baseUrl, SERVICE_TOKEN: agent.api_token, SIGNING_KEY: keyFile };
  const added = await command(signer, ['add-key', keyFile, `${signer.language} key`], env);
  assert.is(added.status, 201, added.what);
  assert.is(added.body.key_id, thumbprintOf(keyFile), 'key_id is the thumbprint of the file');
  assert.is(added.body.name, `${signer.language} key`);
  const policy = await command(
    signer,
    ['PUT', '/whoami/signature-policy', '{"require_signature": true}'],
    env,
  );
  assert.is(policy.status, 200, policy.what);
  assert.equal(policy.body, { require_signature: true });
  return { agent, keyFile, env };
}

/** The signer, run as a program, writes under the policy; the token alone only reads. */
async function assertWritesSignedOnly(server: TestServer, signer: Signer) {
  const { agent, env } = await agentUnderPolicy(server, signer);
  const made = await command(signer, ['POST', '/workspaces', '{"name": "signed"}'], env);
  assert.is(made.status, 201, made.what);
  assert.is(made.body.owner_agent_id, agent.agent_id);

  const unsigned = await callJson(server, 'POST', '/workspaces', agent.api_token, {
    name: 'signed',
  });
  assert.is(unsigned.status, 401, JSON.stringify(unsigned.body));
  assert.is(unsigned.body.code, 'signature_required');
  const read = await callJson(server, 'GET', '/whoami', agent.api_token);
  assert.is(read.status, 200, 'the token alone still reads');

  // Without a token the signature alone says who writes.
  const keyOnly = { SERVICE_URL: env.SERVICE_URL, SIGNING_KEY: env.SIGNING_KEY };
  const tokenless = await command(signer, ['POST', '/workspaces', '{"name": "no token"}'], keyOnly);
  assert.is(tokenless.status, 201, tokenless.what);
  assert.is(tokenless.body.owner_agent_id, agent.agent_id);

  // A file's bytes (not UTF-8) under a path that is percent-encoded, and a read with a query.
  const workspaceId = made.body.workspace_id as string;
  const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x0a, 0x80, 0x7f]);
  const dataFile = join(signer.dir, `data-${agent.agent_id}.bin`);
  writeFileSync(dataFile, bytes);
  const path = `/workspaces/${workspaceId}/files/notes/${encodeURIComponent('café menu #2.bin')}`;
  const saved = await command(signer, ['PUT', path, `@${dataFile}`], env);
  assert.is(saved.status, 201, saved.what);
  const stored = await fetch(server.url(path), {
    headers: { authorization: `Bearer ${agent.api_token}` },
  });
  assert.ok(Buffer.from(await stored.arrayBuffer()).equals(bytes), 'the bytes as sent');
  const listed = await command(
    signer,
    ['GET', `/workspaces/${workspaceId}/files?prefix=notes/`],
    env,
  );
  assert.is(listed.status, 200, listed.what);
  assert.is((listed.body.files as unknown[]).length, 1);

  const off = await command(
    signer,
    ['PUT', '/whoami/signature-policy', '{"require_signature": false}'],
    env,
  );
  assert.is(off.status, 200, off.what);
  assert.equal(off.body, { require_signature: false });
}

/** What the service answers a request sent with `headers`; its status, code and reason. */
async function send(url: string, method: string, headers: Record<string, string>, body: string) {
  const response = await fetch(url, { method, headers, body });
  const problem = (await response.json()) as { code?: string; reason?: string };
  return { status: response.status, code: problem.code, reason: problem.reason };
}

/** Requests the signer's own function signed, changed on the way or sent twice, are refused. */
async function assertChangedRequestsRefused(server: TestServer, signer: Signer) {
  const { agent, keyFile } = await agentUnderPolicy(server, signer);
  const url = server.url('/workspaces');
  const body = '{"name": "as signed"}';
  const base = {
    authorization: `Bearer ${agent.api_token}`,
    'content-type': 'application/json',
  };
  // Each change gets a request signed anew: one whose signature holds takes its nonce even when
  // its body is then refused.
  const signed = () => signer.sign(keyFile, 'POST', url, base, body);
  const genuine = await signed();
  assert.match(genuine['content-digest'] ?? '', /^sha-256=:[A-Za-z0-9+/]{43}=:$/);

  const changedBody = await send(url, 'POST', await signed(), '{"name": "changed"}');
  assert.equal(changedBody, { status: 401, code: 'invalid_signature', reason: 'content_digest' });
  const otherPath = await send(server.url('/watches'), 'POST', await signed(), body);
  assert.equal(otherPath, { status: 401, code: 'invalid_signature', reason: 'signature' });
  const queryAdded = await send(`${url}?visibility=public`, 'POST', await signed(), body);
  assert.equal(queryAdded, { status: 401, code: 'invalid_signature', reason: 'coverage' });

  // The signers send a nonce: the genuine request goes through once, and only once.
  const first = await send(url, 'POST', genuine, body);
  assert.is(first.status, 201, JSON.stringify(first));
  const again = await send(url, 'POST', genuine, body);
  assert.equal(again, { status: 401, code: 'invalid_signature', reason: 'nonce_replayed' });

  // Another agent's token beside this agent's signature.
  const other = await server.signUp();
  const mixed = await signer.sign(
    keyFile,
    'POST',
    url,
    { ...base, authorization: `Bearer ${other.api_token}` },
    body,
  );
  const mismatch = await send(url, 'POST', mixed, body);
  assert.equal(mismatch, { status: 401, code: 'invalid_signature', reason: 'agent_mismatch' });
}

// The Node signer: always, since node runs these tests.
const test = serverSuite('the Node signer of /protocol#signed-requests, run as served');

test('run as a program, it adds a key, turns require_signature on and writes signed (with a token and without, JSON and bytes); the token alone is refused', async ({
  server,
}) => {
  await assertWritesSignedOnly(server, await nodeSigner(server));
});

test('a request its signRequest signed is refused when its body or path changed on the way, a query was added, when sent again, or with another agent\u2019s token', async ({
  server,
}) => {
  await assertChangedRequestsRefused(server, await nodeSigner(server));
});

test('its signedFetch, as the MCP SDK\u2019s fetch, signs every POST to /mcp: a tool call writes under the policy, unsigned it is refused', async (context) => {
  const { server } = context;
  const signer = await nodeSigner(server);
  const { agent, keyFile } = await agentUnderPolicy(server, signer);
  const connect = async (signed: boolean) => {
    const client = new Client({ name: 'signed-from-docs', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
        ...(signed ? { fetch: signer.module.signedFetch(signer.module.loadKey(keyFile)) } : {}),
        requestInit: { headers: { Authorization: `Bearer ${agent.api_token}` } },
      }),
    );
    context.clients.push(client);
    return client;
  };
  const refused = await callTool(await connect(false), 'create_workspace', { name: 'm' });
  assert.is(toolProblem(refused).code, 'signature_required');
  const made = await callTool(await connect(true), 'create_workspace', { name: 'm' });
  assert.not.ok(made.isError, JSON.stringify(made));
});

test('its signRequest signs a socket.io handshake over the connection\u2019s challenge, as /protocol shows: that connection acks under the policy, an unsigned one cannot', async (context) => {
  const { server } = context;
  const signer = await nodeSigner(server);
  const { agent, keyFile } = await agentUnderPolicy(server, signer);
  const key = signer.module.loadKey(keyFile);
  const origin = new URL(server.baseUrl).origin;
  const open = (signed: boolean): Promise<Socket> => {
    const socket: Socket = io(origin, {
      transports: ['websocket'],
      reconnection: false,
      auth: (cb) => {
        if (!signed) return cb({ token: agent.api_token });
        const headers = signer.module.signRequest({
          method: 'GET',
          url: `${origin}/socket.io/`,
          headers: { 'socket-challenge': socket.io.engine.id as string },
          cover: ['socket-challenge'],
          keyId: key.keyId,
          privateKey: key.privateKey,
        });
        cb({
          token: agent.api_token,
          signature_input: headers['signature-input'],
          signature: headers.signature,
        });
      },
    });
    context.sockets.push(socket);
    return new Promise((resolve, reject) => {
      socket.once('connect', () => resolve(socket));
      socket.once('connect_error', reject);
    });
  };
  const { body: feed } = await callJson<{ cursor: string }>(
    server,
    'GET',
    '/changes',
    agent.api_token,
  );
  const ack = (socket: Socket) =>
    new Promise<{ cursor?: string; error?: { code: string } }>((resolve) =>
      socket.emit('ack', { cursor: feed.cursor }, resolve),
    );
  const unsigned = await ack(await open(false));
  assert.is(unsigned.error?.code, 'signature_required', JSON.stringify(unsigned));
  const signed = await ack(await open(true));
  assert.is(signed.error, undefined, JSON.stringify(signed));
  assert.is(signed.cursor, feed.cursor);
});

test.run();

// The Python signer: where Debian's python3 has cryptography; the runner says when it did not run.
const python = clientSuite<{ server: TestServer }>(
  'the Python signer of /protocol#signed-requests, run as served',
  PYTHON_CRYPTOGRAPHY,
);

python.before(async (context) => {
  context.server = await startTestServer();
});
python.after(async ({ server }) => {
  await server.close();
});

python(
  'run as a program, it adds a key, turns require_signature on and writes signed (with a token and without, JSON and bytes); the token alone is refused',
  async ({ server }) => {
    await assertWritesSignedOnly(server, await pythonSigner(server));
  },
);

python(
  'a request its sign_request signed is refused when its body or path changed on the way, a query was added, when sent again, or with another agent\u2019s token',
  async ({ server }) => {
    await assertChangedRequestsRefused(server, await pythonSigner(server));
  },
);

python.run();
