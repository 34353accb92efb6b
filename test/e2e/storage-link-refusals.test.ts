import { Agent as HttpAgent } from 'node:http';
import { AnonymousCredential, BlockBlobClient } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { STORAGE_LINK_LIFETIME_MS } from '../../protocol/files/storage-links.ts';
import { enginesHere } from '../helpers/engines.ts';
import { startTestServer } from '../helpers/server.ts';
import {
  askForLink,
  blockId,
  blockListXml,
  expectRefusal,
  fileLink,
  holdings,
  KiB,
  putBlob,
  putBlock,
  putBlockList,
  QUOTA,
  rawSend,
  refusedAndNothingStored,
  restError,
  sasField,
  sdkOptions,
  sendToLink,
  stagedBlockCount,
  storageLink,
  storageLinkSuite,
  usedBytes,
  withField,
  type Sent,
} from '../helpers/storage-links.ts';
import { joinWorkspace, newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Storage links refused: a link that was tampered with, has expired, grants less than the
 * request asks, names what it may not, or belongs to another agent answers Azure's XML error
 * with the code an Azure client acts on, and leaves no file, no receipt, no storage used and no
 * block. And on both engines, a link answers HEAD and then GET on one kept-alive connection.
 * Malformed requests and the quota have files of their own (storage-link-*.test.ts).
 */
const test = storageLinkSuite('storage links refuse bad links and store nothing');

test('a tampered link answers 403 AuthenticationFailed and stores nothing', async ({ server }) => {
  const owner = await server.signUp();
  const other = await server.signUp();
  const a = await newWorkspace(server, owner);
  const b = await newWorkspace(server, owner);
  const link = await fileLink(server, owner, a, 'a.txt');
  const readLink = (await storageLink(server, owner, a, 'read', 'a.txt')).file_url as string;
  const containerA = await storageLink(server, owner, a, 'readwrite');
  const containerB = await storageLink(server, owner, b, 'readwrite');
  const sig = sasField(link, 'sig');
  const later = new Date(Date.parse(sasField(link, 'se')) + 3_600_000).toISOString();
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
  const read = await sendToLink(issued.file_url as string);
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

test("blocks staged by one agent cannot be committed with another agent's link for the same path", async ({
  server,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const id = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, id);
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
  await joinWorkspace(server, owner, member, open);
  const before = await holdings(server, member, [open]);
  const writable = await askForLink(server, member, open, 'readwrite', 'readme.txt');
  assert.is(writable.status, 403);
  assert.is(writable.headers.get('content-type'), 'application/problem+json');
  assert.is(((await writable.json()) as { code: string }).code, 'forbidden');
  const read = await storageLink(server, member, open, 'read', 'readme.txt');
  const got = await sendToLink(read.file_url as string);
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
    () => sendToLink(link, { method: 'DELETE' }),
    403,
    'AuthorizationPermissionMismatch',
  );
  const container = await storageLink(server, owner, id, 'read');
  const got = await sendToLink(`${container.container_url}/kept.txt?${container.sas_token}`);
  assert.is(got.response.status, 200);
  assert.is(await got.response.text(), 'still here');
});

test('a method no link serves answers 405 UnsupportedHttpVerb with Allow, on a blob and on a container, before the link is read', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'kept.txt', 'still here');
  const container = await storageLink(server, owner, id, 'readwrite');
  const places = [
    [
      `${container.container_url}/kept.txt?${container.sas_token}`,
      'DELETE, GET, HEAD, OPTIONS, PUT',
    ],
    [`${container.container_url}?${container.sas_token}&restype=container`, 'GET, HEAD, OPTIONS'],
    // A signature that does not hold is not read first: the method is refused all the same.
    [`${container.container_url}/kept.txt?sig=x`, 'DELETE, GET, HEAD, OPTIONS, PUT'],
  ] as const;
  for (const [url, allow] of places) {
    for (const method of ['PATCH', 'POST']) {
      const sent = await sendToLink(url, { method });
      await expectRefusal(sent, 405, 'UnsupportedHttpVerb', `${method} ${url}`);
      const allowed = String(sent.response.headers.get('allow')).split(', ').sort().join(', ');
      assert.is(allowed, allow, `${method} ${url}`);
    }
  }
  const got = await sendToLink(`${container.container_url}/kept.txt?${container.sas_token}`);
  assert.is(await got.response.text(), 'still here');
});

test('a file link used for List Blobs answers 403 AuthorizationResourceTypeMismatch', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'kept.txt', 'still here');
  const container = await storageLink(server, owner, id, 'read');
  const listed = await sendToLink(
    `${container.container_url}?${container.sas_token}&restype=container&comp=list`,
  );
  assert.is(listed.response.status, 200, 'the container link lists');
  const fileSas = new URL(await fileLink(server, owner, id, 'kept.txt')).search.slice(1);
  await expectRefusal(
    await sendToLink(`${container.container_url}?${fileSas}&restype=container&comp=list`),
    403,
    'AuthorizationResourceTypeMismatch',
  );
});

test('a blob name with a plain or encoded .. segment answers 400 InvalidResourceName', async ({
  server,
}) => {
  const owner = await server.signUp();
  const id = await newWorkspace(server, owner);
  const link = await storageLink(server, owner, id, 'readwrite');
  for (const name of [
    'a%2F..%2Fb.txt',
    'a%2f%2E%2E%2fb.txt',
    'x/../b.txt',
    '../b.txt',
    'x/%2E%2E/b.txt',
  ]) {
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
    ['a bad signature', () => sendToLink(withField(link, 'sig', 'x')), 403, 'AuthenticationFailed'],
    ['no SAS at all', () => sendToLink(link.split('?')[0] as string), 403, 'AuthenticationFailed'],
    [
      'a missing blob',
      () => sendToLink(`${container.container_url}/nothing.txt?${container.sas_token}`),
      404,
      'BlobNotFound',
    ],
    [
      'no blob type',
      () => sendToLink(link, { method: 'PUT', body: 'x' }),
      400,
      'MissingRequiredHeader',
    ],
    [
      'a verb links do not take',
      () => sendToLink(link, { method: 'POST', body: 'x' }),
      405,
      'UnsupportedHttpVerb',
    ],
    ['over the quota', () => putBlock(link, blockId(1), Buffer.alloc(QUOTA)), 507, 'QuotaExceeded'],
  ];
  for (const [what, request, status, code] of refusals) {
    await expectRefusal(await request(), status, code, what);
  }
  const head = await sendToLink(withField(link, 'sig', 'x'), { method: 'HEAD' });
  assert.is(head.response.status, 403);
  assert.is(head.response.headers.get('x-ms-error-code'), 'AuthenticationFailed');
  assert.is(head.response.headers.get('x-ms-client-request-id'), head.clientRequestId);
  assert.ok(head.response.headers.get('x-ms-request-id'));
});

for (const engine of enginesHere(import.meta.filename)) {
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
