import { BlockBlobClient, ContainerClient, type StoragePipelineOptions } from '@azure/storage-blob';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256 } from '../helpers/digests.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Storage links with the real Azure client (@azure/storage-blob) against the running service:
 * what an agent's existing Azure tools do with a link must simply work.
 */
const test = suite<{ server: TestServer }>('storage links with the Azure SDK');

const QUOTA = 64 * 1024 * 1024;
// No retries: a refusal is seen at once, not after the SDK's back-off.
const NO_RETRY: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

test.before(async (context) => {
  context.server = await startTestServer({ storageQuotaBytes: QUOTA });
});
test.after(async ({ server }) => {
  await server.close();
});

type Agent = { agent_id: string; name: string; api_token: string };
type Link = {
  access: string;
  file_url?: string;
  container_url?: string;
  sas_token?: string;
  expires_at: string;
};

async function workspace(server: TestServer, owner: Agent): Promise<string> {
  const response = await server.post('/workspaces', {}, owner.api_token);
  return ((await response.json()) as { workspace_id: string }).workspace_id;
}

async function link(server: TestServer, agent: Agent, id: string, body: object): Promise<Link> {
  const response = await server.post(`/workspaces/${id}/sas`, body, agent.api_token);
  assert.is(response.status, 200, await response.clone().text());
  return (await response.json()) as Link;
}

async function get(server: TestServer, agent: Agent, path: string) {
  const response = await fetch(server.url(path), {
    headers: { authorization: `Bearer ${agent.api_token}` },
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** The status and Azure code an SDK call was refused with. */
async function refusal(call: Promise<unknown>): Promise<[number, string]> {
  try {
    await call;
  } catch (error) {
    const { statusCode, code } = error as { statusCode: number; code: string };
    return [statusCode, code];
  }
  throw new Error('the call was not refused');
}

function bytesOf(size: number, seed: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let index = 0; index < size; index++) bytes[index] = (index * 31 + seed) & 0xff;
  return bytes;
}

test('a readwrite link with a path is one file_url with Azure SAS fields, good for 10 minutes', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const answer = await link(server, agent, id, { access: 'readwrite', path: 'in/data.bin' });
  assert.equal(Object.keys(answer).sort(), ['access', 'expires_at', 'file_url']);
  const url = new URL(answer.file_url as string);
  assert.is(url.pathname, `/blob/${id}/in/data.bin`);
  for (const field of ['sv', 'sr', 'sp', 'st', 'se', 'sig']) assert.ok(url.searchParams.get(field));
  assert.is(url.searchParams.get('sr'), 'b');
  assert.is(url.searchParams.get('sp'), 'rcw');
  const life = Date.parse(answer.expires_at) - Date.parse(url.searchParams.get('st') as string);
  assert.is(life, 10 * 60 * 1000);
  assert.is(Date.parse(url.searchParams.get('se') as string), Date.parse(answer.expires_at));
});

test('read, and readwrite without a path, answer container_url and sas_token', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  for (const access of ['read', 'readwrite']) {
    const answer = await link(server, agent, id, { access });
    assert.is(answer.container_url, server.url(`/blob/${id}`));
    const token = new URLSearchParams(answer.sas_token);
    assert.is(token.get('sr'), 'c');
    assert.is(token.get('sp'), access === 'read' ? 'r' : 'rcw');
    assert.is(answer.file_url, undefined);
  }
});

test('Put Blob through a file_url saves the file under the agent that asked, with a receipt and a change', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const answer = await link(server, agent, id, { access: 'readwrite', path: 'reports/q3.bin' });
  const bytes = bytesOf(300_000, 1);
  const client = new BlockBlobClient(answer.file_url as string, undefined, NO_RETRY);
  const uploaded = await client.upload(bytes, bytes.length);
  assert.is(uploaded._response.status, 201);
  assert.is(uploaded.etag, `"${sha256(bytes)}"`);
  const files = await get(server, agent, `/workspaces/${id}/files`);
  const [file] = files.json.files as { path: string; sha256: string; saved_by: { name: string } }[];
  assert.is(file?.path, 'reports/q3.bin');
  assert.is(file?.sha256, sha256(bytes));
  assert.is(file?.saved_by.name, agent.name);
  const receipts = await get(server, agent, `/workspaces/${id}/receipts`);
  const [receipt] = receipts.json.receipts as { agent_id: string; size: number; action: string }[];
  assert.equal(
    [receipt?.agent_id, receipt?.size, receipt?.action],
    [agent.agent_id, 300_000, 'save'],
  );
  const changes = await get(server, agent, '/changes');
  const saved = (changes.json.changes as { type: string; data: { path: string } }[]).filter(
    (change) => change.type === 'file.saved',
  );
  assert.equal(
    saved.map((change) => change.data.path),
    ['reports/q3.bin'],
  );
});

test('an upload the SDK splits into Put Block and Put Block List saves one file, and staged blocks never show as files', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const answer = await link(server, agent, id, { access: 'readwrite', path: 'big.bin' });
  const client = new BlockBlobClient(answer.file_url as string, undefined, NO_RETRY);
  const bytes = bytesOf(5 * 1024 * 1024 + 17, 2);
  // Stage two blocks by hand first: nothing is a file until the list is committed.
  await client.stageBlock(Buffer.from('AAAA').toString('base64'), bytes.subarray(0, 4), 4);
  const before = await get(server, agent, `/workspaces/${id}/files`);
  assert.equal(before.json.files, []);
  const staged = await client.uploadData(bytes, {
    maxSingleShotSize: 1024 * 1024,
    blockSize: 1024 * 1024,
    concurrency: 3,
  });
  assert.is(staged._response.status, 201);
  const files = await get(server, agent, `/workspaces/${id}/files`);
  const [file] = files.json.files as { path: string; sha256: string; size: number }[];
  assert.equal([file?.path, file?.size, file?.sha256], ['big.bin', bytes.length, sha256(bytes)]);
  const receipts = await get(server, agent, `/workspaces/${id}/receipts`);
  assert.is((receipts.json.receipts as unknown[]).length, 1);
  // The agent's storage holds the file alone, and the commit dropped every staged block.
  const me = await get(server, agent, '/whoami');
  assert.is((me.json.storage as { used_bytes: number }).used_bytes, bytes.length);
  const left = await server.services.driver.query(
    'select block_id from staged_blocks where workspace_id = $1',
    [id],
  );
  assert.equal(left, []);
});

test('Get Blob answers byte ranges (x-ms-range and Range) with 206, Content-Range, Content-Length and ETag', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const answer = await link(server, agent, id, { access: 'readwrite', path: 'r.bin' });
  const bytes = bytesOf(2 * 1024 * 1024 + 5, 3);
  const client = new BlockBlobClient(answer.file_url as string, undefined, NO_RETRY);
  await client.upload(bytes, bytes.length);
  const part = await client.download(1000, 5000);
  assert.is(part._response.status, 206);
  assert.is(part.contentLength, 5000);
  assert.is(part.contentRange, `bytes 1000-5999/${bytes.length}`);
  assert.is(part.etag, `"${sha256(bytes)}"`);
  const chunks: Buffer[] = [];
  for await (const chunk of part.readableStreamBody as AsyncIterable<Buffer>) chunks.push(chunk);
  assert.ok(Buffer.concat(chunks).equals(bytes.subarray(1000, 6000)));
  const plain = await fetch(answer.file_url as string, { headers: { range: 'bytes=-10' } });
  assert.is(plain.status, 206);
  assert.ok(Buffer.from(await plain.arrayBuffer()).equals(bytes.subarray(bytes.length - 10)));
  // The SDK's parallel download: properties first, then ranges over kept-alive connections.
  const whole = await client.downloadToBuffer(0, undefined, {
    blockSize: 512 * 1024,
    concurrency: 4,
  });
  assert.ok(whole.equals(bytes));
});

test('Get Blob Properties (HEAD) answers the size, type and ETag with no body', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const answer = await link(server, agent, id, { access: 'readwrite', path: 'notes.txt' });
  const client = new BlockBlobClient(answer.file_url as string, undefined, NO_RETRY);
  await client.upload('hello links', 11);
  const properties = await client.getProperties();
  assert.is(properties.contentLength, 11);
  assert.is(properties.contentType, 'text/plain; charset=utf-8');
  assert.is(properties.blobType, 'BlockBlob');
  assert.is(properties.etag, `"${sha256(Buffer.from('hello links'))}"`);
});

test('List Blobs on a container link pages with prefix, maxresults and marker, and groups by delimiter', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const write = await link(server, agent, id, { access: 'readwrite' });
  const writer = new ContainerClient(
    `${write.container_url}?${write.sas_token}`,
    undefined,
    NO_RETRY,
  );
  const names = ['a/1.txt', 'a/2.txt', 'a/3.txt', 'b/x.txt', 'top.txt'];
  for (const name of names) await writer.getBlockBlobClient(name).upload(name, name.length);
  const read = await link(server, agent, id, { access: 'read' });
  const reader = new ContainerClient(
    `${read.container_url}?${read.sas_token}`,
    undefined,
    NO_RETRY,
  );
  const listed: string[] = [];
  let pages = 0;
  for await (const page of reader.listBlobsFlat().byPage({ maxPageSize: 2 })) {
    pages++;
    for (const item of page.segment.blobItems) listed.push(item.name);
  }
  assert.equal(listed, names);
  assert.is(pages, 3);
  const underA: { name: string; size: number | undefined }[] = [];
  for await (const item of reader.listBlobsFlat({ prefix: 'a/' })) {
    underA.push({ name: item.name, size: item.properties.contentLength });
  }
  assert.equal(underA, [
    { name: 'a/1.txt', size: 7 },
    { name: 'a/2.txt', size: 7 },
    { name: 'a/3.txt', size: 7 },
  ]);
  const tree: string[] = [];
  for await (const item of reader.listBlobsByHierarchy('/')) tree.push(`${item.kind}:${item.name}`);
  assert.equal(tree, ['prefix:a/', 'prefix:b/', 'blob:top.txt']);
  const text = await reader.getBlobClient('b/x.txt').downloadToBuffer();
  assert.is(text.toString(), 'b/x.txt');
});

test('conditional writes: If-None-Match * creates only (409 BlobAlreadyExists), If-Match with another ETag answers 412', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const answer = await link(server, agent, id, { access: 'readwrite', path: 'once.txt' });
  const client = new BlockBlobClient(answer.file_url as string, undefined, NO_RETRY);
  const created = await client.upload('first', 5, { conditions: { ifNoneMatch: '*' } });
  assert.is(created._response.status, 201);
  const again = await refusal(client.upload('second', 6, { conditions: { ifNoneMatch: '*' } }));
  assert.equal(again, [409, 'BlobAlreadyExists']);
  const stale = await refusal(
    client.upload('third', 5, { conditions: { ifMatch: '"not-the-etag"' } }),
  );
  assert.equal(stale, [412, 'ConditionNotMet']);
  const current = await client.upload('fourth', 6, { conditions: { ifMatch: created.etag } });
  assert.is(current._response.status, 201);
  // In blocks too: the SDK carries the conditions on Put Block List.
  await client.stageBlock('QUFBQQ==', Buffer.from('fifth'), 5);
  const listed = await refusal(
    client.commitBlockList(['QUFBQQ=='], { conditions: { ifNoneMatch: '*' } }),
  );
  assert.equal(listed, [409, 'BlobAlreadyExists']);
  const text = await client.downloadToBuffer();
  assert.is(text.toString(), 'fourth');
  const receipts = await get(server, agent, `/workspaces/${id}/receipts`);
  assert.is((receipts.json.receipts as unknown[]).length, 2, 'the refused writes left no receipt');
});

test('answers echo x-ms-client-request-id and carry x-ms-request-id and x-ms-version', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const answer = await link(server, agent, id, { access: 'readwrite', path: 'e.txt' });
  const response = await fetch(answer.file_url as string, {
    method: 'PUT',
    headers: { 'x-ms-blob-type': 'BlockBlob', 'x-ms-client-request-id': 'my-request-7' },
    body: 'echo',
  });
  assert.is(response.status, 201);
  assert.is(response.headers.get('x-ms-client-request-id'), 'my-request-7');
  assert.ok(response.headers.get('x-ms-request-id'));
  assert.ok(response.headers.get('x-ms-version'));
});

test('get_storage_link is an MCP tool that answers the same link', async ({ server }) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const client = new Client({ name: 'links-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
      requestInit: { headers: { authorization: `Bearer ${agent.api_token}` } },
    }),
  );
  try {
    const result = (await client.callTool({
      name: 'get_storage_link',
      arguments: { workspace_id: id, access: 'readwrite', path: 'via-mcp.txt' },
    })) as { structuredContent?: Link; isError?: boolean };
    assert.not.ok(result.isError);
    const fileUrl = result.structuredContent?.file_url as string;
    const response = await fetch(fileUrl, {
      method: 'PUT',
      headers: { 'x-ms-blob-type': 'BlockBlob' },
      body: 'saved through a link from MCP',
    });
    assert.is(response.status, 201);
  } finally {
    await client.close();
  }
});

test('over MCP, write_file and read_file carry up to 1 MiB; past it the error names get_storage_link', async ({
  server,
}) => {
  const agent = await server.signUp();
  const id = await workspace(server, agent);
  const client = new Client({ name: 'mcp-bytes-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
      requestInit: { headers: { authorization: `Bearer ${agent.api_token}` } },
    }),
  );
  try {
    const small = (await client.callTool({
      name: 'write_file',
      arguments: { workspace_id: id, path: 'small.txt', content: 'hello over MCP' },
    })) as { isError?: boolean; structuredContent?: { receipt: { size: number } } };
    assert.not.ok(small.isError);
    assert.is(small.structuredContent?.receipt.size, 14);
    const read = (await client.callTool({
      name: 'read_file',
      arguments: { workspace_id: id, path: 'small.txt' },
    })) as { structuredContent?: { text: string } };
    assert.is(read.structuredContent?.text, 'hello over MCP');
    const big = Buffer.alloc(1024 * 1024 + 1, 0x61);
    const refused = (await client.callTool({
      name: 'write_file',
      arguments: { workspace_id: id, path: 'big.txt', content_base64: big.toString('base64') },
    })) as { isError?: boolean; content: { text: string }[] };
    assert.ok(refused.isError);
    const problem = JSON.parse(refused.content[0]?.text ?? '{}') as {
      code: string;
      detail: string;
    };
    assert.is(problem.code, 'payload_too_large');
    assert.match(problem.detail, 'get_storage_link');
    // Saved over HTTP instead, the big file is too large to read over MCP: the same advice.
    const put = await fetch(server.url(`/workspaces/${id}/files/big.txt`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${agent.api_token}` },
      body: big,
    });
    assert.is(put.status, 201);
    const tooBig = (await client.callTool({
      name: 'read_file',
      arguments: { workspace_id: id, path: 'big.txt' },
    })) as { isError?: boolean; content: { text: string }[] };
    assert.ok(tooBig.isError);
    assert.match(tooBig.content[0]?.text ?? '', 'get_storage_link');
  } finally {
    await client.close();
  }
});

test.run();
