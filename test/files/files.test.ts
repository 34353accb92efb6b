import { createHash, createPublicKey, verify } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson } from '../../protocol/jcs.ts';
import { sha256 } from '../helpers/digests.ts';
import { sendAs } from '../helpers/http.ts';
import { eventually } from '../helpers/turns.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/** Files in workspaces over HTTP: saves, versions, receipts anyone can verify, access, quota. */
const test = suite<{ server: TestServer }>('files in workspaces');

const QUOTA = 64 * 1024;

test.before(async (context) => {
  context.server = await startTestServer({ storageQuotaBytes: QUOTA });
});
test.after(async ({ server }) => {
  await server.close();
});

type Agent = { agent_id: string; name: string; api_token: string };
type Receipt = Record<string, unknown> & {
  version: number;
  sha256: string;
  size: number;
  action: string;
  prev_hash: string | null;
  signature: string;
  kid: string;
};

async function save(server: TestServer, agent: Agent, id: string, path: string, body: string) {
  const response = await sendAs(
    server,
    'PUT',
    `/workspaces/${id}/files/${path}`,
    agent.api_token,
    body,
  );
  const json = (await response.json()) as { receipt: Receipt; code?: string };
  return { status: response.status, receipt: json.receipt, code: json.code };
}

/** A PUT whose path travels exactly as written (no URL normalisation on the client). */
function rawPut(server: TestServer, path: string, token: string, body: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = httpRequest(
      server.url('/'),
      { method: 'PUT', path, headers: { authorization: `Bearer ${token}` } },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

test('a save answers a signed receipt, the bytes read back with ETag, Range and 304', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const saved = await save(server, owner, id, 'notes/hello.txt', 'hello, world');
  assert.is(saved.status, 201);
  assert.is(saved.receipt.version, 1);
  assert.is(saved.receipt.size, 12);
  assert.is(saved.receipt.sha256, sha256('hello, world'));
  assert.is(saved.receipt.prev_hash, null, "the workspace's first receipt");

  const read = await sendAs(
    server,
    'GET',
    `/workspaces/${id}/files/notes/hello.txt`,
    owner.api_token,
  );
  assert.is(read.status, 200);
  assert.is(await read.text(), 'hello, world');
  const etag = read.headers.get('etag') as string;
  assert.is(etag, `"${sha256('hello, world')}"`);
  const ranged = await fetch(server.url(`/workspaces/${id}/files/notes/hello.txt`), {
    headers: { authorization: `Bearer ${owner.api_token}`, range: 'bytes=7-11' },
  });
  assert.is(ranged.status, 206);
  assert.is(await ranged.text(), 'world');
  const again = await fetch(server.url(`/workspaces/${id}/files/notes/hello.txt`), {
    headers: { authorization: `Bearer ${owner.api_token}`, 'if-none-match': etag },
  });
  assert.is(again.status, 304);
  const types = (
    (await (await server.get('/changes', owner.api_token)).json()) as {
      changes: { type: string }[];
    }
  ).changes.map((change) => change.type);
  assert.ok(types.includes('file.saved'));
});

test('receipts verify with the published keys alone, and chain each to the one before', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await save(server, owner, id, 'a.txt', 'one');
  await save(server, owner, id, 'a.txt', 'two');
  const deleted = await sendAs(server, 'DELETE', `/workspaces/${id}/files/a.txt`, owner.api_token);
  assert.is(deleted.status, 200);
  const listed = (await (
    await server.get(`/workspaces/${id}/receipts`, owner.api_token)
  ).json()) as {
    receipts: Receipt[];
  };
  const receipts = listed.receipts.reverse();
  assert.equal(
    receipts.map((r) => [r.action, r.version]),
    [
      ['save', 1],
      ['save', 2],
      ['delete', 3],
    ],
  );
  const jwks = (await (await fetch(server.url('/.well-known/service-keys.json'))).json()) as {
    keys: { kid: string; x: string; kty: string; crv: string }[];
  };
  let previous: Receipt | null = null;
  for (const receipt of receipts) {
    const jwk = jwks.keys.find((key) => key.kid === receipt.kid);
    assert.ok(jwk, 'the signing key is published');
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    const { signature, ...unsigned } = receipt;
    assert.ok(
      verify(null, Buffer.from(canonicalJson(unsigned)), key, Buffer.from(signature, 'base64url')),
      `receipt ${receipt.version} verifies`,
    );
    assert.is(
      receipt.prev_hash,
      previous ? createHash('sha256').update(canonicalJson(previous)).digest('hex') : null,
    );
    previous = receipt;
  }
});

test('markdown with a YAML header keeps every version; other files only the newest', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await save(server, owner, id, 'deal.md', '---\ndeal: one\n---\nfirst');
  await save(server, owner, id, 'deal.md', '---\ndeal: one\n---\nsecond');
  const first = await sendAs(
    server,
    'GET',
    `/workspaces/${id}/files/deal.md?version=1`,
    owner.api_token,
  );
  assert.is(await first.text(), '---\ndeal: one\n---\nfirst');
  await save(server, owner, id, 'plain.txt', 'first');
  await save(server, owner, id, 'plain.txt', 'second');
  const gone = await sendAs(
    server,
    'GET',
    `/workspaces/${id}/files/plain.txt?version=1`,
    owner.api_token,
  );
  assert.is(gone.status, 404);
  const files = (await (await server.get(`/workspaces/${id}/files`, owner.api_token)).json()) as {
    files: { path: string; version: number }[];
  };
  assert.equal(
    files.files.map((f) => [f.path, f.version]),
    [
      ['deal.md', 2],
      ['plain.txt', 2],
    ],
  );
});

test('strangers get the same 404 as for nothing; readers of a public workspace may not write', async ({
  server,
}) => {
  const owner = await server.signUp();
  const stranger = await server.signUp();
  const secret = await newWorkspace(server, owner);
  const open = await newWorkspace(server, owner, 'public');
  await save(server, owner, secret, 'x.txt', 'secret');
  await save(server, owner, open, 'x.txt', 'public');
  const hidden = await sendAs(
    server,
    'GET',
    `/workspaces/${secret}/files/x.txt`,
    stranger.api_token,
  );
  const missing = await sendAs(
    server,
    'GET',
    '/workspaces/6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20/files/x.txt',
    stranger.api_token,
  );
  assert.is(hidden.status, 404);
  assert.is(await hidden.text(), await missing.text());
  assert.is((await save(server, stranger, secret, 'y.txt', 'no')).status, 404);
  const readable = await sendAs(
    server,
    'GET',
    `/workspaces/${open}/files/x.txt`,
    stranger.api_token,
  );
  assert.is(await readable.text(), 'public');
  const refused = await save(server, stranger, open, 'y.txt', 'no');
  assert.is(refused.status, 403);
});

test('bad paths answer 400 invalid_path and touch nothing', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  // fetch resolves '..' and '.' (even encoded) before sending; node:http sends the path as given.
  for (const path of [
    'a/../b',
    'a/%2E%2E/b',
    'a%2F..%2Fb',
    'a/%00',
    'a//b',
    `${'x'.repeat(1025)}`,
    'a/%2E/b',
    'a/%E2%80%AEexe.txt',
  ]) {
    const response = await rawPut(server, `/workspaces/${id}/files/${path}`, owner.api_token, 'x');
    assert.is(response.status, 400, path.slice(0, 20));
    assert.is((JSON.parse(response.body) as { code: string }).code, 'invalid_path');
  }
  const files = (await (await server.get(`/workspaces/${id}/files`, owner.api_token)).json()) as {
    files: unknown[];
  };
  assert.equal(files.files, []);
});

test('the quota holds exactly under concurrent saves, and deleting gives bytes back', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const chunk = 'x'.repeat(QUOTA / 4);
  const answers = await Promise.all(
    Array.from({ length: 6 }, (_, i) => save(server, owner, id, `f${i}.bin`, chunk)),
  );
  const statuses = answers.map((answer) => answer.status).sort();
  assert.equal(statuses, [201, 201, 201, 201, 507, 507]);
  assert.ok(answers.filter((a) => a.status === 507).every((a) => a.code === 'quota_exceeded'));
  const who = (await (await server.get('/whoami', owner.api_token)).json()) as {
    storage: { used_bytes: number; quota_bytes: number; uploads_in_progress_bytes: number };
  };
  assert.equal(
    [who.storage.used_bytes, who.storage.quota_bytes, who.storage.uploads_in_progress_bytes],
    [QUOTA, QUOTA, 0],
  );
  const saved = answers.find((a) => a.status === 201)?.receipt as unknown as { path: string };
  await sendAs(server, 'DELETE', `/workspaces/${id}/files/${saved.path}`, owner.api_token);
  assert.is((await save(server, owner, id, 'after.bin', chunk)).status, 201);
});

test('a body over 100 MB is refused with 413 before it is read', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const response = await fetch(server.url(`/workspaces/${id}/files/big.bin`), {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${owner.api_token}`,
      'content-length': String(100 * 1024 * 1024 + 1),
    },
    body: 'x',
    // A lying length: the service refuses on the declared size without reading.
  }).catch(() => null);
  if (response) assert.is(response.status, 413);
  const files = (await (await server.get(`/workspaces/${id}/files`, owner.api_token)).json()) as {
    files: unknown[];
  };
  assert.equal(files.files, []);
});

test('a save whose declared length is past the quota answers 507 and saves nothing', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const response = await fetch(server.url(`/workspaces/${id}/files/too-much.bin`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${owner.api_token}` },
    body: 'x'.repeat(QUOTA + 1),
  });
  assert.is(response.status, 507);
  assert.is(((await response.json()) as { code: string }).code, 'quota_exceeded');
  const files = (await (await server.get(`/workspaces/${id}/files`, owner.api_token)).json()) as {
    files: unknown[];
  };
  assert.equal(files.files, []);
});

test('a save with no declared length is stopped as soon as it passes the quota: 507, nothing saved', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  let sent = 0;
  // Chunked, with no Content-Length, and far longer than the quota (yet under 100 MB): the
  // service must stop reading near the quota, not take it all and refuse at the end.
  const ENDLESS = 64 * 1024 * 1024;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= ENDLESS) return controller.close();
      sent += 16 * 1024;
      controller.enqueue(new Uint8Array(16 * 1024).fill(120));
    },
  });
  const response = await fetch(server.url(`/workspaces/${id}/files/endless.bin`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${owner.api_token}` },
    body,
    duplex: 'half',
  } as RequestInit);
  assert.is(response.status, 507);
  assert.is(((await response.json()) as { code: string }).code, 'quota_exceeded');
  assert.ok(sent < ENDLESS / 2, `the client sent ${sent} bytes before the refusal`);
  const who = (await (await server.get('/whoami', owner.api_token)).json()) as {
    storage: { used_bytes: number };
  };
  assert.is(who.storage.used_bytes, 0);
  const files = (await (await server.get(`/workspaces/${id}/files`, owner.api_token)).json()) as {
    files: unknown[];
  };
  assert.equal(files.files, []);
});

test('a client that goes away mid-upload leaves no file, no receipt and no storage used', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const request = httpRequest(server.url(`/workspaces/${id}/files/half.bin`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${owner.api_token}`, 'content-length': '32768' },
    agent: false,
  });
  request.on('error', () => undefined);
  request.write('x'.repeat(4096));
  const turns = async (until: () => boolean) => {
    for (let i = 0; i < 20_000 && !until(); i++) await new Promise((r) => setImmediate(r));
    assert.ok(until());
  };
  const usedBytes = async () =>
    (
      (await (await server.get('/whoami', owner.api_token)).json()) as {
        storage: { used_bytes: number };
      }
    ).storage.used_bytes;
  await turns(() => server.openHttpRequests() === 1);
  // The handler reserves the declared length before it reads a byte: wait until it has, so
  // that the 0 awaited below is the reservation given back, not one not yet taken.
  await eventually(
    'the upload reserves its Content-Length',
    async () => (await usedBytes()) === 32768,
  );
  request.destroy();
  await turns(() => server.openHttpRequests() === 0);
  // The engine counts the request closed when the client goes; the handler then lets go of the
  // room it reserved in a commit of its own: wait for that, not a guess.
  await eventually('the upload lets go of its reservation', async () => (await usedBytes()) === 0);
  const files = (await (await server.get(`/workspaces/${id}/files`, owner.api_token)).json()) as {
    files: unknown[];
  };
  assert.equal(files.files, []);
  const receipts = (await (
    await server.get(`/workspaces/${id}/receipts`, owner.api_token)
  ).json()) as {
    receipts: unknown[];
  };
  assert.equal(receipts.receipts, []);
  assert.is(await usedBytes(), 0);
});

test('files are listed a page at a time, each once, under a prefix', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const names = ['docs/b.txt', 'docs/a.txt', 'docs/%C3%A9t%C3%A9.txt', 'docs/Z.txt', 'other.txt'];
  for (const name of names) await save(server, owner, id, name, name);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page = (await (
      await server.get(
        `/workspaces/${id}/files?prefix=docs/&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        owner.api_token,
      )
    ).json()) as { files: { path: string }[]; next_cursor: string | null };
    seen.push(...page.files.map((file) => file.path));
    cursor = page.next_cursor;
  } while (cursor);
  assert.equal(seen.sort(), ['docs/Z.txt', 'docs/a.txt', 'docs/b.txt', 'docs/été.txt']);
});

test('over MCP a file is saved from text and read back as text', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const client = new Client({ name: 'files-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
      requestInit: { headers: { authorization: `Bearer ${owner.api_token}` } },
    }),
  );
  try {
    const saved = (await client.callTool({
      name: 'write_file',
      arguments: { workspace_id: id, path: 'via/mcp.txt', content: 'hello over MCP' },
    })) as unknown as { isError?: boolean; structuredContent: { receipt: Receipt } };
    assert.not.ok(saved.isError);
    assert.is(saved.structuredContent.receipt.sha256, sha256('hello over MCP'));
    const read = (await client.callTool({
      name: 'read_file',
      arguments: { workspace_id: id, path: 'via/mcp.txt' },
    })) as unknown as { content: { type: string; text?: string }[] };
    assert.is(read.content[0]?.text, 'hello over MCP');
  } finally {
    await client.close();
  }
});

test.run();
