import { createHash, randomUUID } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { AnonymousCredential, BlockBlobClient, RestError } from '@azure/storage-blob';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { STORAGE_LINK_LIFETIME_MS } from '../../protocol/storage-links.ts';
import { TestClock } from '../helpers/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Storage links refused: every bad link and bad request answers Azure's XML error with the
 * code an Azure client acts on, and leaves no file, no receipt, no storage used and no block.
 */
const test = suite<{ server: TestServer; clock: TestClock }>(
  'storage links refuse bad input and store nothing',
);

const QUOTA = 1024 * 1024;
const KiB = 1024;
const MiB = 1024 * 1024;

test.before(async (context) => {
  context.clock = new TestClock();
  context.server = await startTestServer({ storageQuotaBytes: QUOTA, clock: context.clock });
});
test.after(async ({ server }) => {
  await server.close();
});

type Agent = { agent_id: string; name: string; api_token: string };
interface StorageLink {
  access: 'read' | 'readwrite';
  file_url?: string;
  container_url?: string;
  sas_token?: string;
  expires_at: string;
}

async function newWorkspace(server: TestServer, owner: Agent, visibility = 'private') {
  const response = await server.post('/workspaces', { visibility }, owner.api_token);
  assert.is(response.status, 201);
  return ((await response.json()) as { workspace_id: string }).workspace_id;
}

/** Makes `member` a member of the workspace, invited by its owner. */
async function join(server: TestServer, owner: Agent, member: Agent, workspaceId: string) {
  const invite = await server.post(`/workspaces/${workspaceId}/invites`, {}, owner.api_token);
  assert.is(invite.status, 201);
  const { invite_token } = (await invite.json()) as { invite_token: string };
  const redeemed = await server.post('/invites/redeem', { invite_token }, member.api_token);
  assert.is(redeemed.status, 200);
}

function askForLink(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  access: 'read' | 'readwrite',
  path?: string,
) {
  return server.post(
    `/workspaces/${workspaceId}/sas`,
    { access, ...(path === undefined ? {} : { path }) },
    agent.api_token,
  );
}

async function storageLink(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  access: 'read' | 'readwrite',
  path?: string,
): Promise<StorageLink> {
  const response = await askForLink(server, agent, workspaceId, access, path);
  assert.is(response.status, 200, `a ${access} link`);
  return (await response.json()) as StorageLink;
}

async function fileLink(server: TestServer, agent: Agent, workspaceId: string, path: string) {
  return (await storageLink(server, agent, workspaceId, 'readwrite', path)).file_url as string;
}

/** Saves through the REST API (the token, not a link). */
async function saveFile(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  path: string,
  body: string,
) {
  const response = await fetch(server.url(`/workspaces/${workspaceId}/files/${path}`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body,
  });
  assert.is(response.status, 201);
}

/** What an agent holds as the REST API shows it: files and receipts per workspace, bytes used. */
async function holdings(server: TestServer, agent: Agent, workspaceIds: string[]) {
  const read = async (path: string) => {
    const response = await server.get(path, agent.api_token);
    assert.is(response.status, 200, path);
    return response.json();
  };
  const workspaces = [];
  for (const id of workspaceIds) {
    workspaces.push({
      files: await read(`/workspaces/${id}/files`),
      receipts: await read(`/workspaces/${id}/receipts`),
    });
  }
  const who = (await read('/whoami')) as { storage: { used_bytes: number } };
  return { workspaces, usedBytes: who.storage.used_bytes };
}

async function usedBytes(server: TestServer, agent: Agent): Promise<number> {
  return (await holdings(server, agent, [])).usedBytes;
}

async function stagedBlockCount(server: TestServer): Promise<number> {
  const [row] = await server.services.driver.query<{ n: number }>(
    'select count(*)::int8 as n from staged_blocks',
  );
  return Number(row?.n);
}

/** A request to a link, carrying a client request id that every answer must echo. */
interface Sent {
  response: Response;
  clientRequestId: string;
}

async function send(url: string, init: RequestInit = {}): Promise<Sent> {
  const clientRequestId = randomUUID();
  const response = await fetch(url, {
    ...init,
    headers: { 'x-ms-client-request-id': clientRequestId, ...(init.headers ?? {}) },
  });
  return { response, clientRequestId };
}

const putBlob = (url: string, body: BodyInit, blobType = 'BlockBlob') =>
  send(url, { method: 'PUT', headers: { 'x-ms-blob-type': blobType }, body });

const blockId = (n: number) =>
  Buffer.from(`block-${String(n).padStart(6, '0')}`).toString('base64');

const putBlock = (url: string, id: string, body: BodyInit) =>
  send(`${url}&comp=block&blockid=${encodeURIComponent(id)}`, { method: 'PUT', body });

const blockListXml = (ids: string[]) =>
  `<?xml version="1.0" encoding="utf-8"?><BlockList>${ids
    .map((id) => `<Latest>${id}</Latest>`)
    .join('')}</BlockList>`;

const putBlockList = (url: string, xml: string) =>
  send(`${url}&comp=blocklist`, { method: 'PUT', body: xml });

/** Asserts Azure's XML refusal: status, code in header and body, the request ids. */
async function expectRefusal(sent: Sent, status: number, code: string, what = code) {
  const { response, clientRequestId } = sent;
  const body = await response.text();
  assert.is(response.status, status, `${what}: status (${body})`);
  assert.is(response.headers.get('x-ms-error-code'), code, `${what}: x-ms-error-code`);
  assert.is(response.headers.get('content-type'), 'application/xml');
  assert.ok(body.includes(`<Error><Code>${code}</Code><Message>`), `${what}: the XML error`);
  assert.is(response.headers.get('x-ms-client-request-id'), clientRequestId, `${what}: echoed`);
  assert.match(response.headers.get('x-ms-request-id') ?? '', /^[0-9a-f-]{36}$/);
  return body;
}

/** Sends, expects the refusal, and checks that the agent holds exactly what it held before. */
async function refusedAndNothingStored(
  server: TestServer,
  agent: Agent,
  workspaceIds: string[],
  request: () => Promise<Sent>,
  status: number,
  code: string,
  what = code,
) {
  const before = await holdings(server, agent, workspaceIds);
  const staged = await stagedBlockCount(server);
  const body = await expectRefusal(await request(), status, code, what);
  assert.equal(await holdings(server, agent, workspaceIds), before, `${what}: nothing stored`);
  assert.is(await stagedBlockCount(server), staged, `${what}: no block staged`);
  return body;
}

/** The link with one SAS field set to `value`. */
function withField(url: string, name: string, value: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set(name, value);
  return parsed.toString();
}

const field = (url: string, name: string) => new URL(url).searchParams.get(name) as string;

/** A request that travels exactly as written (no URL normalisation), on the agent given. */
function rawSend(
  server: TestServer,
  method: string,
  path: string,
  options: { headers?: OutgoingHttpHeaders; body?: string; agent?: HttpAgent } = {},
) {
  const clientRequestId = randomUUID();
  return new Promise<Sent & { reusedSocket: boolean }>((resolve, reject) => {
    const request = httpRequest(
      server.url('/'),
      {
        method,
        path,
        headers: { 'x-ms-client-request-id': clientRequestId, ...options.headers },
        agent: options.agent ?? false,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(answer.headers)) {
            if (typeof value === 'string') headers.set(name, value);
          }
          const response = new Response(Buffer.concat(chunks), {
            status: answer.statusCode ?? 0,
            headers,
          });
          resolve({ response, clientRequestId, reusedSocket: request.reusedSocket });
        });
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** The refusal an Azure SDK call ends in. */
async function restError(call: Promise<unknown>): Promise<RestError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof RestError) return error;
    throw error;
  }
  throw new Error('the call was not refused');
}

const sdkOptions = { retryOptions: { maxTries: 1 } };

test('a tampered link answers 403 AuthenticationFailed and stores nothing', async ({ server }) => {
  const owner = await server.signUp();
  const other = await server.signUp();
  const a = await newWorkspace(server, owner);
  const b = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, a, 'a.txt');
  const readLink = (await storageLink(server, owner, a, 'read', 'a.txt')).file_url as string;
  const containerA = await storageLink(server, owner, a, 'readwrite');
  const containerB = await storageLink(server, owner, b, 'readwrite');
  const sig = field(link, 'sig');
  const later = new Date(Date.parse(field(link, 'se')) + 3_600_000).toISOString();
  const tampered: Record<string, string> = {
    'one character of sig changed': withField(
      link,
      'sig',
      `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`,
    ),
    'a read link widened to sp=rcw': withField(readLink, 'sp', 'rcw'),
    'se moved later': withField(link, 'se', later.replace(/\.\d{3}Z$/, 'Z')),
    "saoid set to another agent's id": withField(link, 'saoid', other.agent_id),
    "workspace A's link used on workspace B": `${containerB.container_url}/a.txt?${containerA.sas_token}`,
    'a file link used for another path': link.replace('/a.txt?', '/b.txt?'),
  };
  for (const [what, url] of Object.entries(tampered)) {
    const body = await refusedAndNothingStored(
      server,
      owner,
      [a, b],
      () => putBlob(url, 'tampered'),
      403,
      'AuthenticationFailed',
      what,
    );
    assert.match(body, /<AuthenticationErrorDetail>[^<]+<\/AuthenticationErrorDetail>/);
  }
  const rewritten = await putBlob(withField(link, 'sp', 'rcw'), 'intact');
  assert.is(rewritten.response.status, 201, 'the link rewritten with its own values saves');
});

test('a link answers 403 AuthenticationFailed once it has expired, and works until then', async ({
  server,
  clock,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const issued = await storageLink(server, owner, id, 'readwrite', 'late.txt');
  assert.is(Date.parse(issued.expires_at), clock.now() + STORAGE_LINK_LIFETIME_MS);
  clock.advance(STORAGE_LINK_LIFETIME_MS - 1000);
  const inTime = await putBlob(issued.file_url as string, 'in time');
  assert.is(inTime.response.status, 201, 'a second before expiry the link works');
  clock.advance(2000);
  const body = await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(issued.file_url as string, 'too late'),
    403,
    'AuthenticationFailed',
  );
  assert.match(body, /expired/);
  const read = await send(issued.file_url as string);
  await expectRefusal(read, 403, 'AuthenticationFailed', 'reading with the expired link');
});

test('a read link used to write through the Azure SDK is refused 403 AuthorizationPermissionMismatch, in one shot or in blocks', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'read', 'blocks.bin');
  const client = new BlockBlobClient(
    link.file_url as string,
    new AnonymousCredential(),
    sdkOptions,
  );
  const before = await holdings(server, owner, [id]);
  const staged = await stagedBlockCount(server);
  const data = Buffer.alloc(4 * KiB, 7);

  const oneShot = await restError(client.upload(data, data.length));
  assert.is(oneShot.statusCode, 403);
  assert.is(oneShot.code, 'AuthorizationPermissionMismatch');
  const sentId = oneShot.request?.headers.get('x-ms-client-request-id');
  assert.ok(sentId, 'the SDK sends a client request id');
  assert.is(oneShot.response?.headers.get('x-ms-client-request-id'), sentId, 'echoed');
  assert.ok(oneShot.response?.headers.get('x-ms-request-id'), 'the SDK sees a request id');

  const inBlocks = await restError(
    client.uploadData(data, { maxSingleShotSize: KiB, blockSize: KiB, concurrency: 1 }),
  );
  assert.is(inBlocks.statusCode, 403);
  assert.is(inBlocks.code, 'AuthorizationPermissionMismatch');
  assert.match(inBlocks.request?.url ?? '', /comp=block/, 'the SDK was staging blocks');

  assert.equal(await holdings(server, owner, [id]), before, 'nothing stored');
  assert.is(await stagedBlockCount(server), staged, 'no block staged');
});

test('Put Blob without x-ms-blob-type answers 400 MissingRequiredHeader, and an AppendBlob 400 InvalidHeaderValue', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'typed.txt');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => send(link, { method: 'PUT', body: 'no type' }),
    400,
    'MissingRequiredHeader',
  );
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(link, 'append', 'AppendBlob'),
    400,
    'InvalidHeaderValue',
  );
});

test('Put Block List naming a block never staged answers 400 InvalidBlockList, and malformed XML 400 InvalidXmlDocument', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'listed.txt');
  const staged = await putBlock(link, blockId(1), 'first');
  assert.is(staged.response.status, 201);
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlockList(link, blockListXml([blockId(1), blockId(2)])),
    400,
    'InvalidBlockList',
  );
  for (const xml of [
    `<BlockList><Latest>${blockId(1)}</Latest>`,
    `<BlockList><Latest>${blockId(1)}</Latest><Oops/></BlockList>`,
    'not xml at all',
  ]) {
    await refusedAndNothingStored(
      server,
      owner,
      [id],
      () => putBlockList(link, xml),
      400,
      'InvalidXmlDocument',
      xml,
    );
  }
  const committed = await putBlockList(link, blockListXml([blockId(1)]));
  assert.is(committed.response.status, 201, 'the staged block alone commits');
});

test('Put Block declaring more than 100 MiB answers 413 RequestBodyTooLarge before a byte is read', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = new URL(await fileLink(server, owner, id, 'huge.bin'));
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      rawSend(
        server,
        'PUT',
        `${link.pathname}${link.search}&comp=block&blockid=${encodeURIComponent(blockId(1))}`,
        {
          headers: { 'content-length': String(100 * MiB + 1) },
        },
      ),
    413,
    'RequestBodyTooLarge',
  );
});

test("blocks staged by one agent cannot be committed with another agent's link for the same path", async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const id = await newWorkspace(server, owner);
  await join(server, owner, member, id);
  const memberLink = await fileLink(server, member, id, 'shared.bin');
  const ownerLink = await fileLink(server, owner, id, 'shared.bin');
  for (const n of [1, 2]) {
    assert.is((await putBlock(memberLink, blockId(n), `part ${n}`)).response.status, 201);
  }
  const xml = blockListXml([blockId(1), blockId(2)]);
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlockList(ownerLink, xml),
    400,
    'InvalidBlockList',
  );
  // Only the member's two staged blocks count (every kept byte does): no file was charged.
  assert.is(await usedBytes(server, member), 12, "the member's storage is untouched");
  const own = await putBlockList(memberLink, xml);
  assert.is(own.response.status, 201, 'the agent that staged them commits them');
});

test('Put Blob past what is left of the quota answers 507 QuotaExceeded and stores nothing; up to it saves', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const first = await putBlob(
    await fileLink(server, owner, id, 'first.bin'),
    Buffer.alloc(600 * KiB),
  );
  assert.is(first.response.status, 201);
  const link = await fileLink(server, owner, id, 'second.bin');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(link, Buffer.alloc(600 * KiB)),
    507,
    'QuotaExceeded',
  );
  const exactly = await putBlob(link, Buffer.alloc(QUOTA - 600 * KiB));
  assert.is(exactly.response.status, 201, 'up to exactly the quota saves');
  assert.is(await usedBytes(server, owner), QUOTA);
});

test('Put Blob larger than the whole quota answers 507 QuotaExceeded, declared or streamed', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'too-big.bin');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(link, Buffer.alloc(QUOTA + 1)),
    507,
    'QuotaExceeded',
    'with Content-Length',
  );
  async function* overQuota() {
    yield new Uint8Array(QUOTA);
    yield new Uint8Array(1);
  }
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      send(link, {
        method: 'PUT',
        headers: { 'x-ms-blob-type': 'BlockBlob' },
        body: overQuota() as unknown as BodyInit,
        duplex: 'half',
      } as RequestInit),
    507,
    'QuotaExceeded',
    'streamed without Content-Length',
  );
});

test('staged blocks count against the quota: staging past it answers 507 QuotaExceeded', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, id, 'staged.bin');
  const first = await putBlock(link, blockId(1), Buffer.alloc(700 * KiB));
  assert.is(first.response.status, 201);
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlock(link, blockId(2), Buffer.alloc(400 * KiB)),
    507,
    'QuotaExceeded',
  );
  const other = await fileLink(server, owner, id, 'elsewhere.bin');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlock(other, blockId(1), Buffer.alloc(400 * KiB)),
    507,
    'QuotaExceeded',
    'staging for another path',
  );
  async function* streamed() {
    yield new Uint8Array(200 * KiB);
    yield new Uint8Array(200 * KiB);
  }
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () =>
      send(`${link}&comp=block&blockid=${encodeURIComponent(blockId(3))}`, {
        method: 'PUT',
        body: streamed() as unknown as BodyInit,
        duplex: 'half',
      } as RequestInit),
    507,
    'QuotaExceeded',
    'staging a block streamed without Content-Length',
  );
  const replaced = await putBlock(link, blockId(1), Buffer.alloc(900 * KiB));
  assert.is(replaced.response.status, 201, 'restaging a block counts it once');
  // The staged 900 KiB hold room from plain saves too, until committed or expired.
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => putBlob(other, Buffer.alloc(200 * KiB)),
    507,
    'QuotaExceeded',
    'a Put Blob while staged blocks hold the room',
  );
});

test('of two concurrent Put Blobs that each fit the quota alone but not together, exactly one saves', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const links = [
    await fileLink(server, owner, id, 'one.bin'),
    await fileLink(server, owner, id, 'two.bin'),
  ];
  const answers = await Promise.all(links.map((link) => putBlob(link, Buffer.alloc(600 * KiB))));
  const statuses = answers.map((sent) => sent.response.status).sort();
  assert.equal(statuses, [201, 507]);
  const refused = answers.find((sent) => sent.response.status === 507) as Sent;
  await expectRefusal(refused, 507, 'QuotaExceeded');
  const held = await holdings(server, owner, [id]);
  assert.is(held.usedBytes, 600 * KiB);
  const [files] = held.workspaces as {
    files: { files: unknown[] };
    receipts: { receipts: unknown[] };
  }[];
  assert.is(files?.files.files.length, 1);
  assert.is(files?.receipts.receipts.length, 1);
});

test('a link upload larger than 100 MiB is saved when the quota allows', async () => {
  const size = 101 * MiB;
  const server = await startTestServer({ storageQuotaBytes: 120 * MiB });
  try {
    const owner = await server.signUp();
    const id = await newWorkspace(server, owner);
    const link = await fileLink(server, owner, id, 'large.bin');
    const chunk = Buffer.alloc(MiB);
    const hash = createHash('sha256');
    // Generated as it is sent: one MiB at a time, never the whole body in memory.
    async function* body() {
      for (let offset = 0; offset < size; offset += chunk.length) {
        chunk.fill(offset / MiB);
        hash.update(chunk);
        yield new Uint8Array(chunk);
      }
    }
    const response = await fetch(link, {
      method: 'PUT',
      headers: { 'x-ms-blob-type': 'BlockBlob' },
      body: body() as unknown as BodyInit,
      duplex: 'half',
    } as RequestInit);
    assert.is(response.status, 201, await response.text());
    assert.is(response.headers.get('etag'), `"${hash.digest('hex')}"`);
    assert.is(await usedBytes(server, owner), size);
    const head = await fetch(link, { method: 'HEAD' });
    assert.is(head.headers.get('content-length'), String(size));
  } finally {
    await server.close();
  }
});

test("a non-member's link cannot exist; a public workspace's non-owner member gets a read link but not a readwrite one", async ({
  server,
}) => {
  const owner = await server.signUp();
  const stranger = await server.signUp();
  const member = await server.signUp();
  const secret = await newWorkspace(server, owner);
  const refused = await askForLink(server, stranger, secret, 'read');
  assert.is(refused.status, 404);
  assert.is(refused.headers.get('content-type'), 'application/problem+json');
  assert.is(((await refused.json()) as { code: string }).code, 'not_found');

  const open = await newWorkspace(server, owner, 'public');
  await saveFile(server, owner, open, 'readme.txt', 'open to all');
  await join(server, owner, member, open);
  const before = await holdings(server, member, [open]);
  const writable = await askForLink(server, member, open, 'readwrite', 'readme.txt');
  assert.is(writable.status, 403);
  assert.is(writable.headers.get('content-type'), 'application/problem+json');
  assert.is(((await writable.json()) as { code: string }).code, 'forbidden');
  const read = await storageLink(server, member, open, 'read', 'readme.txt');
  const got = await send(read.file_url as string);
  assert.is(got.response.status, 200);
  assert.is(await got.response.text(), 'open to all');
  assert.equal(await holdings(server, member, [open]), before, 'nothing stored');
});

test('a link does not delete, and a container link reads a file', async ({ server }) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'kept.txt', 'still here');
  const link = await fileLink(server, owner, id, 'kept.txt');
  await refusedAndNothingStored(
    server,
    owner,
    [id],
    () => send(link, { method: 'DELETE' }),
    403,
    'AuthorizationPermissionMismatch',
  );
  const container = await storageLink(server, owner, id, 'read');
  const got = await send(`${container.container_url}/kept.txt?${container.sas_token}`);
  assert.is(got.response.status, 200);
  assert.is(await got.response.text(), 'still here');
});

test('a file link used for List Blobs answers 403 AuthorizationResourceTypeMismatch', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'kept.txt', 'still here');
  const container = await storageLink(server, owner, id, 'read');
  const listed = await send(
    `${container.container_url}?${container.sas_token}&restype=container&comp=list`,
  );
  assert.is(listed.response.status, 200, 'the container link lists');
  const fileSas = new URL(await fileLink(server, owner, id, 'kept.txt')).search.slice(1);
  await expectRefusal(
    await send(`${container.container_url}?${fileSas}&restype=container&comp=list`),
    403,
    'AuthorizationResourceTypeMismatch',
  );
});

test('a blob name with %2F in a segment or a .. segment answers 400 InvalidResourceName', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  for (const name of ['a%2Fb.txt', 'a%2fb.txt', 'x/../b.txt', '../b.txt', 'x/%2E%2E/b.txt']) {
    await refusedAndNothingStored(
      server,
      owner,
      [id],
      () =>
        rawSend(server, 'PUT', `/blob/${id}/${name}?${link.sas_token}`, {
          headers: { 'x-ms-blob-type': 'BlockBlob' },
          body: 'escaped',
        }),
      400,
      'InvalidResourceName',
      name,
    );
  }
});

test('every refusal echoes x-ms-client-request-id and carries x-ms-request-id', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'held.txt', 'a few bytes of the quota');
  const link = await fileLink(server, owner, id, 'echo.txt');
  const container = await storageLink(server, owner, id, 'read');
  const refusals: [string, () => Promise<Sent>, number, string][] = [
    ['a bad signature', () => send(withField(link, 'sig', 'x')), 403, 'AuthenticationFailed'],
    ['no SAS at all', () => send(link.split('?')[0] as string), 403, 'AuthenticationFailed'],
    [
      'a missing blob',
      () => send(`${container.container_url}/nothing.txt?${container.sas_token}`),
      404,
      'BlobNotFound',
    ],
    ['no blob type', () => send(link, { method: 'PUT', body: 'x' }), 400, 'MissingRequiredHeader'],
    [
      'a verb links do not take',
      () => send(link, { method: 'POST', body: 'x' }),
      400,
      'UnsupportedHttpVerb',
    ],
    ['over the quota', () => putBlock(link, blockId(1), Buffer.alloc(QUOTA)), 507, 'QuotaExceeded'],
  ];
  for (const [what, request, status, code] of refusals) {
    await expectRefusal(await request(), status, code, what);
  }
  const head = await send(withField(link, 'sig', 'x'), { method: 'HEAD' });
  assert.is(head.response.status, 403);
  assert.is(head.response.headers.get('x-ms-error-code'), 'AuthenticationFailed');
  assert.is(head.response.headers.get('x-ms-client-request-id'), head.clientRequestId);
  assert.ok(head.response.headers.get('x-ms-request-id'));
});

for (const engine of ['uws', 'node'] as const) {
  test(`on ${engine}, a HEAD answer and a GET after it on the same kept-alive connection both succeed`, async () => {
    const server = await startTestServer({ httpEngine: engine });
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    try {
      assert.is(server.engine, engine);
      const owner = await server.signUp();
      const id = await newWorkspace(server, owner);
      await saveFile(server, owner, id, 'twice.txt', 'read me twice');
      const link = new URL(await fileLink(server, owner, id, 'twice.txt'));
      const path = `${link.pathname}${link.search}`;
      const head = await rawSend(server, 'HEAD', path, { agent });
      assert.is(head.response.status, 200);
      assert.is(head.response.headers.get('content-length'), '13');
      const get = await rawSend(server, 'GET', path, { agent });
      assert.is(get.response.status, 200);
      assert.is(await get.response.text(), 'read me twice');
      assert.ok(get.reusedSocket, 'the GET went on the HEAD connection');
      const again = await rawSend(server, 'HEAD', path, { agent });
      assert.is(again.response.status, 200);
      assert.ok(again.reusedSocket, 'and so did the HEAD after it');
    } finally {
      agent.destroy();
      await server.close();
    }
  });
}

test.run();
