import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlockBlobClient, type StoragePipelineOptions } from '@azure/storage-blob';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { newWorkspace, type TestAgent } from '../helpers/workspaces.ts';

/**
 * The storage quota holds every byte kept for an agent, and nothing a refused upload sent stays
 * on disk: through the real doors (PUT, storage links with the Azure SDK and raw fetch), with a
 * 1 MiB quota, counting the blob store's bytes in the server's own data directory right after the
 * answers (no collector run).
 */
const QUOTA = 1024 * 1024;
const KB = 1000;

const test = suite<{ server: TestServer; dataDir: string }>('every kept byte counts');

test.before(async (context) => {
  context.dataDir = mkdtempSync(join(tmpdir(), 'agent-service-quota-'));
  const dataDir = context.dataDir;
  onTestsEnd(async () => rmSync(dataDir, { recursive: true, force: true }));
  context.server = await startTestServer({ storageQuotaBytes: QUOTA, dataDir });
});
test.after(async ({ server }) => {
  await server.close();
});

/** Files and bytes under the blob store's directory, temporary files included. */
function blobsOnDisk(dataDir: string): { files: number; bytes: number } {
  const walk = (dir: string): { files: number; bytes: number } => {
    let files = 0;
    let bytes = 0;
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const info = statSync(path);
      if (info.isDirectory()) {
        const inner = walk(path);
        files += inner.files;
        bytes += inner.bytes;
      } else {
        files++;
        bytes += info.size;
      }
    }
    return { files, bytes };
  };
  return walk(join(dataDir, 'blobs'));
}

type Storage = {
  used_bytes: number;
  quota_bytes: number;
  current_files_bytes: number;
  older_versions_bytes: number;
  staged_blocks_bytes: number;
  uploads_in_progress_bytes: number;
  rule: string;
};

async function storage(server: TestServer, agent: TestAgent): Promise<Storage> {
  const response = await server.get('/whoami', agent.api_token);
  assert.is(response.status, 200);
  return ((await response.json()) as { storage: Storage }).storage;
}

async function put(
  server: TestServer,
  agent: TestAgent,
  workspaceId: string,
  path: string,
  body: Uint8Array | ReadableStream<Uint8Array>,
): Promise<{ status: number; code?: string }> {
  try {
    const response = await fetch(server.url(`/workspaces/${workspaceId}/files/${path}`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${agent.api_token}` },
      body,
      ...(body instanceof ReadableStream && { duplex: 'half' }),
    } as RequestInit);
    const text = await response.text();
    const code = text.startsWith('{') ? (JSON.parse(text) as { code?: string }).code : undefined;
    return { status: response.status, ...(code !== undefined && { code }) };
  } catch {
    // The server answered (and closed) before the client finished sending: a refusal too.
    return { status: 0 };
  }
}

/** `size` bytes sent in 64 KB chunks with no Content-Length (chunked). */
function chunked(size: number): ReadableStream<Uint8Array> {
  let left = size;
  return new ReadableStream({
    pull(controller) {
      if (left === 0) return controller.close();
      const chunk = randomBytes(Math.min(64 * 1024, left));
      left -= chunk.length;
      controller.enqueue(chunk);
    },
  });
}

/** Markdown of `size` bytes with a valid YAML header (the index reads it). */
function indexedMarkdown(size: number, seed: string): Buffer {
  const head = `---\ntitle: notes ${seed}\n---\n`;
  return Buffer.concat([Buffer.from(head), Buffer.alloc(size - head.length, 'a')]);
}

/** Markdown of `size` bytes that starts with `---` and then holds random bytes. */
function unreadableMarkdown(size: number): Buffer {
  return Buffer.concat([Buffer.from('---\n'), randomBytes(size - 4)]);
}

test('sixty saves of 600 KB of unreadable markdown keep only the newest; the disk holds at most the quota', async ({
  server,
  dataDir,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const before = blobsOnDisk(dataDir);
  for (let save = 0; save < 60; save++) {
    const answer = await put(server, agent, id, 'noise.md', unreadableMarkdown(600 * KB));
    assert.is(answer.status, 201, `save ${save + 1}`);
  }
  const used = await storage(server, agent);
  assert.is(used.used_bytes, 600 * KB);
  assert.is(used.current_files_bytes, 600 * KB);
  assert.is(used.older_versions_bytes, 0);
  const old = await server.get(`/workspaces/${id}/files/noise.md?version=1`, agent.api_token);
  assert.is(old.status, 404);
  // Each save's let-go bytes leave just after its answer: once they have, the disk holds only
  // what is kept.
  await server.services.files.discards.settled();
  const added = blobsOnDisk(dataDir).bytes - before.bytes;
  assert.ok(added <= QUOTA, `the blob store grew by ${added} bytes against a ${QUOTA} quota`);
});

test('every version of markdown the index reads is kept and counted: a save past the quota is refused', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  assert.is(
    (await put(server, agent, id, 'notes.md', indexedMarkdown(600 * KB, 'v1'))).status,
    201,
  );
  const refused = await put(server, agent, id, 'notes.md', indexedMarkdown(600 * KB, 'v2'));
  assert.equal(refused, { status: 507, code: 'quota_exceeded' });
  assert.is(
    (await put(server, agent, id, 'notes.md', indexedMarkdown(100 * KB, 'v2'))).status,
    201,
  );
  const used = await storage(server, agent);
  assert.equal(
    {
      used: used.used_bytes,
      current: used.current_files_bytes,
      older: used.older_versions_bytes,
      rule: used.rule,
    },
    // Each version's header fields, as the index keeps them, count too (`{"title":"notes v1"}`,
    // and its copy in `dimensions`: 40 bytes a version).
    { used: 700 * KB + 80, current: 100 * KB, older: 600 * KB + 80, rule: 'every_kept_byte' },
  );
  const first = await server.get(`/workspaces/${id}/files/notes.md?version=1`, agent.api_token);
  assert.is(first.status, 200);
  assert.is((await first.arrayBuffer()).byteLength, 600 * KB);
});

test('deleting a file lets go of every version it kept: the quota comes back and the bytes leave the disk', async ({
  server,
  dataDir,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const before = blobsOnDisk(dataDir);
  for (const seed of ['v1', 'v2', 'v3']) {
    assert.is(
      (await put(server, agent, id, 'plan.md', indexedMarkdown(200 * KB, seed))).status,
      201,
    );
  }
  // With the three versions' header fields as the index keeps them (20 bytes each, twice:
  // `fields` and `dimensions`).
  assert.is((await storage(server, agent)).older_versions_bytes, 400 * KB + 120);
  const deleted = await fetch(server.url(`/workspaces/${id}/files/plan.md`), {
    method: 'DELETE',
    headers: { authorization: `Bearer ${agent.api_token}` },
  });
  assert.is(deleted.status, 200, await deleted.clone().text());
  const used = await storage(server, agent);
  assert.equal([used.used_bytes, used.current_files_bytes, used.older_versions_bytes], [0, 0, 0]);
  const old = await server.get(`/workspaces/${id}/files/plan.md?version=1`, agent.api_token);
  assert.is(old.status, 404);
  // The bytes are deleted after the answer, not before it.
  await server.services.files.discards.settled();
  assert.is(blobsOnDisk(dataDir).bytes, before.bytes);
  // All the room is there again.
  assert.is(
    (await put(server, agent, id, 'plan.md', indexedMarkdown(QUOTA - 100, 'v5'))).status,
    201,
  );
});

test('39 parallel chunked PUTs past the quota: at most the quota is accepted and the refused leave no byte on disk', async ({
  server,
  dataDir,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const before = blobsOnDisk(dataDir);
  const answers = await Promise.all(
    Array.from({ length: 39 }, (_, n) => put(server, agent, id, `part-${n}.bin`, chunked(QUOTA))),
  );
  const accepted = answers.filter((answer) => answer.status === 201).length;
  assert.ok(accepted <= 1, `${accepted} uploads of the whole quota were accepted`);
  for (const answer of answers) {
    if (answer.status !== 201) assert.ok([507, 0].includes(answer.status), JSON.stringify(answer));
  }
  assert.ok(answers.some((answer) => answer.status === 507));
  const after = blobsOnDisk(dataDir);
  assert.is(after.bytes - before.bytes, accepted * QUOTA);
  assert.is(after.files - before.files, accepted);
  const used = await storage(server, agent);
  assert.is(used.used_bytes, accepted * QUOTA);
  assert.is(used.uploads_in_progress_bytes, 0);
});

test('concurrent uploads that together exceed the quota: exactly what fits is accepted, nothing else stays', async ({
  server,
  dataDir,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const before = blobsOnDisk(dataDir);
  const size = 300 * KB;
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, n) => put(server, agent, id, `doc-${n}.bin`, randomBytes(size))),
  );
  const accepted = answers.filter((answer) => answer.status === 201).length;
  // Declared lengths are reserved whole: the first three to ask fit, the others are refused.
  assert.is(accepted, Math.floor(QUOTA / size));
  assert.ok(answers.every((answer) => answer.status === 201 || answer.code === 'quota_exceeded'));
  assert.is(blobsOnDisk(dataDir).bytes - before.bytes, accepted * size);
  assert.is((await storage(server, agent)).used_bytes, accepted * size);
});

/**
 * A PUT whose body the test sends by hand: with `Content-Length: size`, or chunked when `size`
 * is null. Answers the request (write to it, end it) and its answer's status.
 */
function openUpload(
  server: TestServer,
  agent: TestAgent,
  path: string,
  size: number | null,
): { request: ClientRequest; status: Promise<number> } {
  const request = httpRequest(server.url(path), {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${agent.api_token}`,
      ...(size !== null && { 'content-length': String(size) }),
    },
  });
  const status = new Promise<number>((resolve, reject) => {
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
  });
  return { request, status };
}

/** Asks whoami until the agent's uploads in progress hold room (or gives up, answering 0). */
async function roomHeldByUploads(server: TestServer, agent: TestAgent): Promise<number> {
  for (let look = 0; look < 500; look++) {
    const held = (await storage(server, agent)).uploads_in_progress_bytes;
    if (held > 0) return held;
  }
  return 0;
}

for (const sent of ['with its Content-Length', 'chunked'] as const) {
  test(`an upload in progress (${sent}) holds its room: another is refused while it streams, then it is saved`, async ({
    server,
  }) => {
    const agent = await server.signUp();
    const id = await newWorkspace(server, agent);
    const path = `/workspaces/${id}/files/slow.bin`;
    const slow = openUpload(server, agent, path, sent === 'chunked' ? null : QUOTA);
    slow.request.write(randomBytes(64 * 1024));
    const held = await roomHeldByUploads(server, agent);
    // The declared length is reserved whole; a chunked body reserves ahead of what it sent.
    if (sent === 'chunked') assert.ok(held > 64 * 1024 && held < QUOTA, String(held));
    else assert.is(held, QUOTA);
    const other = await put(server, agent, id, 'quick.bin', randomBytes(QUOTA - held + 1));
    assert.equal(other, { status: 507, code: 'quota_exceeded' }, 'refused while the first streams');
    slow.request.end(randomBytes(QUOTA - 64 * 1024));
    assert.is(await slow.status, 201);
    const used = await storage(server, agent);
    assert.equal([used.used_bytes, used.uploads_in_progress_bytes], [QUOTA, 0]);
  });
}

// No retries: a refusal is seen at once, not after the SDK's back-off.
const NO_RETRY: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

test('20 parallel Put Blocks past the quota (Azure SDK): the refused leave no byte on disk', async ({
  server,
  dataDir,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const made = await server.post(
    `/workspaces/${id}/sas`,
    { access: 'readwrite', path: 'big.bin' },
    agent.api_token,
  );
  assert.is(made.status, 200, await made.clone().text());
  const { file_url } = (await made.json()) as { file_url: string };
  const client = new BlockBlobClient(file_url, undefined, NO_RETRY);
  const before = blobsOnDisk(dataDir);
  const block = 400 * KB;
  const outcomes = await Promise.all(
    Array.from({ length: 20 }, async (_, n) => {
      const blockId = Buffer.from(`block-${String(n).padStart(4, '0')}`).toString('base64');
      try {
        await client.stageBlock(blockId, randomBytes(block), block);
        return 201;
      } catch (error) {
        return (error as { statusCode?: number }).statusCode ?? 0;
      }
    }),
  );
  const staged = outcomes.filter((status) => status === 201).length;
  assert.is(staged, Math.floor(QUOTA / block));
  assert.ok(
    outcomes.every((status) => status === 201 || status === 507),
    String(outcomes),
  );
  assert.is(blobsOnDisk(dataDir).bytes - before.bytes, staged * block);
  assert.is((await storage(server, agent)).staged_blocks_bytes, staged * block);
});

test('Put Blocks sent chunked through raw fetch stop at the quota and leave no byte on disk', async ({
  server,
  dataDir,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const made = await server.post(
    `/workspaces/${id}/sas`,
    { access: 'readwrite', path: 'raw.bin' },
    agent.api_token,
  );
  const { file_url } = (await made.json()) as { file_url: string };
  const before = blobsOnDisk(dataDir);
  const statuses = await Promise.all(
    Array.from({ length: 8 }, async (_, n) => {
      const url = `${file_url}&comp=block&blockid=${encodeURIComponent(Buffer.from(`raw-${n}`).toString('base64'))}`;
      try {
        const response = await fetch(url, {
          method: 'PUT',
          body: chunked(QUOTA / 2),
          duplex: 'half',
        } as RequestInit);
        await response.arrayBuffer();
        return response.status;
      } catch {
        return 0;
      }
    }),
  );
  const staged = statuses.filter((status) => status === 201).length;
  assert.ok(staged <= 2, String(statuses));
  assert.ok(
    statuses.every((status) => [201, 507, 0].includes(status)),
    String(statuses),
  );
  assert.is(blobsOnDisk(dataDir).bytes - before.bytes, (staged * QUOTA) / 2);
  const used = await storage(server, agent);
  assert.is(used.used_bytes, (staged * QUOTA) / 2);
  assert.is(used.uploads_in_progress_bytes, 0);
});

test('an upload refused at its commit (If-None-Match: * over a file) leaves no byte on disk', async ({
  server,
  dataDir,
}) => {
  const agent = await server.signUp();
  const id = await newWorkspace(server, agent);
  const made = await server.post(
    `/workspaces/${id}/sas`,
    { access: 'readwrite', path: 'once.bin' },
    agent.api_token,
  );
  const { file_url } = (await made.json()) as { file_url: string };
  const create = (bytes: Uint8Array) =>
    fetch(file_url, {
      method: 'PUT',
      headers: { 'x-ms-blob-type': 'BlockBlob', 'if-none-match': '*' },
      body: bytes,
    } as RequestInit);
  assert.is((await create(randomBytes(100 * KB))).status, 201);
  const before = blobsOnDisk(dataDir);
  for (let attempt = 0; attempt < 5; attempt++) {
    const refused = await create(randomBytes(100 * KB));
    assert.is(refused.status, 409);
    assert.is(refused.headers.get('x-ms-error-code'), 'BlobAlreadyExists');
  }
  assert.equal(blobsOnDisk(dataDir), before);
  assert.is((await storage(server, agent)).used_bytes, 100 * KB);
});

test('whoami names the rule, and /protocol states it', async ({ server }) => {
  const agent = await server.signUp();
  const used = await storage(server, agent);
  assert.is(used.rule, 'every_kept_byte');
  assert.is(used.quota_bytes, QUOTA);
  const protocol = await (await server.get('/protocol')).text();
  assert.ok(protocol.includes('every_kept_byte'));
});

test.run();

/**
 * Two servers on one PostgreSQL share each agent's quota exactly: uploads in progress on both
 * are reserved in the database.
 */
const twoProcesses = postgresSuite<{ a: TestServer; b: TestServer; dataDir: string }>(
  'two servers hold one quota',
);

twoProcesses.before(async (context) => {
  const databaseUrl = await freshDatabaseUrl();
  context.dataDir = mkdtempSync(join(tmpdir(), 'agent-service-quota-shared-'));
  const dataDir = context.dataDir;
  onTestsEnd(async () => rmSync(dataDir, { recursive: true, force: true }));
  context.a = await startTestServer({ databaseUrl, dataDir, storageQuotaBytes: QUOTA });
  context.b = await startTestServer({ databaseUrl, dataDir, storageQuotaBytes: QUOTA });
});
twoProcesses.after(async ({ a, b }) => {
  await a.close();
  await b.close();
});

twoProcesses(
  'uploads at once through two servers take at most the quota between them',
  async ({ a, b, dataDir }) => {
    const agent = await a.signUp();
    const id = await newWorkspace(a, agent);
    const before = blobsOnDisk(dataDir);
    const size = 300 * KB;
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        put(n % 2 ? a : b, agent, id, `both-${n}.bin`, n % 3 ? randomBytes(size) : chunked(size)),
      ),
    );
    const accepted = answers.filter((answer) => answer.status === 201).length;
    assert.ok(accepted >= 1 && accepted <= Math.floor(QUOTA / size), String(accepted));
    assert.is(blobsOnDisk(dataDir).bytes - before.bytes, accepted * size);
    assert.is((await storage(b, agent)).used_bytes, accepted * size);
  },
);

twoProcesses.run();
