import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { AnonymousCredential, BlockBlobClient, ContainerClient } from '@azure/storage-blob';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enginesHere } from '../helpers/engines.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, type TestAgent } from '../helpers/workspaces.ts';
import { requestHead, Wire } from '../helpers/wire.ts';

/**
 * Nothing a client does at the HTTP seam can end the process (issue 17, item 0): thousands of
 * refused and cut-off uploads and downloads, on both engines, through JSON routes, byte routes
 * and storage links, cut at random points of the body and of the answer, on fresh and on
 * kept-alive connections. The service must still answer afterwards and hold no request open.
 *
 * The crash this guards against: on a kept-alive connection whose TCP window has grown, one
 * socket read brings a request's head with hundreds of KiB of its body; the route refuses it
 * at once (a read-only link's Put Block: 403), the answer ends the uWS response, and then uWS
 * hands over the body bytes of that same read, which pushed the unread body past its high-water
 * mark and paused a response that had already ended: uWS throws, from inside its own callback.
 *
 * The server runs in this process, so a crash is caught here (uncaughtException) and fails
 * the test instead of ending the run. Set STRESS_SEED to replay one run's random choices.
 */

const MIB = 1024 * 1024;
const KIB = 1024;
const QUOTA = 32 * MIB;
const OVER_LIMIT = 101 * MIB;
const SEED = Number(process.env.STRESS_SEED) || Math.floor(Math.random() * 2 ** 31);
/** A block of bytes to slice bodies from (never held twice). */
const BYTES = randomBytes(2 * MIB);

interface Context {
  server: TestServer;
  owner: TestAgent;
  stranger: TestAgent;
  workspaceId: string;
  readSas: string;
  writeSas: string;
  crashes: unknown[];
  stopWatching: () => void;
}

/** One request the stress sends, and what it answers when sent whole. */
interface Target {
  name: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The length it declares; the body sent is at most this. */
  declared: (random: Random) => number;
  /** Answered from the head alone, while the body is still arriving (a refusal). */
  early: boolean;
  /** Refused for the length it declares alone: sent whole at a smaller size, it is taken. */
  bySize: boolean;
  /** What a whole request answers (for the early ones, what the head alone answers). */
  statuses: number[];
}

type Random = () => number;

/** mulberry32: a small seeded generator, so that a failing run can be replayed. */
function seeded(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const between = (random: Random, low: number, high: number) =>
  low + Math.floor(random() * (high - low + 1));
const pick = <T>(random: Random, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)] as T;

function targets(context: Context): Target[] {
  const { workspaceId: ws, readSas, writeSas, owner, stranger } = context;
  const bearer = (agent: TestAgent) => ({ authorization: `Bearer ${agent.api_token}` });
  const block = (n: number) =>
    Buffer.from(`block-${String(n).padStart(6, '0')}`).toString('base64');
  const upTo = (high: number) => (random: Random) => between(random, 1, high);
  const over = (bytes: number) => () => bytes;
  return [
    {
      name: 'Put Block through a read-only link',
      method: 'PUT',
      path: `/blob/${ws}/refused.bin?comp=block&blockid=${block(1)}&${readSas}`,
      headers: {},
      declared: upTo(2 * MIB),
      early: true,
      bySize: false,
      statuses: [403],
    },
    {
      name: 'Put Blob through a read-only link',
      method: 'PUT',
      path: `/blob/${ws}/refused.bin?${readSas}`,
      headers: { 'x-ms-blob-type': 'BlockBlob' },
      declared: upTo(2 * MIB),
      early: true,
      bySize: false,
      statuses: [403],
    },
    {
      name: 'Put Blob past the quota through a link',
      method: 'PUT',
      path: `/blob/${ws}/too-big.bin?${writeSas}`,
      headers: { 'x-ms-blob-type': 'BlockBlob' },
      declared: over(QUOTA + MIB),
      early: true,
      bySize: true,
      statuses: [413, 507],
    },
    {
      name: 'Put Block over the block size through a link',
      method: 'PUT',
      path: `/blob/${ws}/too-big.bin?comp=block&blockid=${block(2)}&${writeSas}`,
      headers: {},
      declared: over(OVER_LIMIT),
      early: true,
      bySize: true,
      statuses: [413],
    },
    {
      name: 'file PUT without a token',
      method: 'PUT',
      path: `/workspaces/${ws}/files/refused.bin`,
      headers: {},
      declared: upTo(2 * MIB),
      early: true,
      bySize: false,
      statuses: [401],
    },
    {
      name: 'file PUT by a stranger',
      method: 'PUT',
      path: `/workspaces/${ws}/files/refused.bin`,
      headers: bearer(stranger),
      declared: upTo(2 * MIB),
      early: true,
      bySize: false,
      statuses: [403, 404],
    },
    {
      name: 'file PUT over the file size',
      method: 'PUT',
      path: `/workspaces/${ws}/files/too-big.bin`,
      headers: bearer(owner),
      declared: over(OVER_LIMIT),
      early: true,
      bySize: true,
      statuses: [413],
    },
    {
      name: 'file PUT past the quota',
      method: 'PUT',
      path: `/workspaces/${ws}/files/too-big.bin`,
      headers: bearer(owner),
      declared: over(QUOTA + MIB),
      early: true,
      bySize: true,
      statuses: [413, 507],
    },
    {
      name: 'JSON POST over its body limit',
      method: 'POST',
      path: `/workspaces/${ws}/messages`,
      headers: { ...bearer(owner), 'content-type': 'application/json' },
      declared: over(4 * MIB),
      early: true,
      bySize: true,
      statuses: [413],
    },
    {
      name: 'JSON sign-up over its body limit',
      method: 'POST',
      path: '/agents',
      headers: { 'content-type': 'application/json' },
      declared: over(4 * MIB),
      early: true,
      bySize: true,
      statuses: [413],
    },
    {
      name: 'file PUT by the owner',
      method: 'PUT',
      path: `/workspaces/${ws}/files/cut/upload.bin`,
      headers: bearer(owner),
      declared: upTo(MIB),
      early: false,
      bySize: false,
      statuses: [201],
    },
    {
      name: 'Put Blob through a write link',
      method: 'PUT',
      path: `/blob/${ws}/cut/blob.bin?${writeSas}`,
      headers: { 'x-ms-blob-type': 'BlockBlob' },
      declared: upTo(MIB),
      early: false,
      bySize: false,
      statuses: [201],
    },
    {
      name: 'Put Block through a write link',
      method: 'PUT',
      path: `/blob/${ws}/cut/blocks.bin?comp=block&blockid=${block(3)}&${writeSas}`,
      headers: {},
      declared: upTo(MIB),
      early: false,
      bySize: false,
      statuses: [201],
    },
    {
      name: 'JSON POST of a message (bytes that are no JSON)',
      method: 'POST',
      path: `/workspaces/${ws}/messages`,
      headers: { ...bearer(owner), 'content-type': 'application/json' },
      declared: upTo(16 * KIB),
      early: false,
      bySize: false,
      statuses: [400],
    },
  ];
}

/** Runs `count` tasks, `width` at a time. */
async function inParallel(count: number, width: number, task: (index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** Waits (polling: the engines have no event for it) until `ready` holds, failing at 10 s. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`still waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A request with a body cut at a random point: its head and a random part of its body, in
 * one to three writes; then the client leaves at once, or (where the route answers from the
 * head) after the answer, sending more first or not; or it sends the whole body and reads on.
 */
async function cutUpload(context: Context, target: Target, random: Random): Promise<void> {
  const wire = new Wire(context.server.port);
  const declared = target.declared(random);
  const whole = random() < 0.15 && declared <= BYTES.length;
  // Mostly a little of the body; now and then past the high-water mark of 256 KiB.
  const most = random() < 0.25 ? 600 * KIB : 64 * KIB;
  const sent = whole ? declared : between(random, 0, Math.min(declared - 1, most));
  const head = requestHead(target.method, target.path, {
    ...target.headers,
    'content-length': declared,
  });
  const pieces = between(random, 1, 3);
  let written = 0;
  for (let piece = 1; piece <= pieces; piece++) {
    const end = piece === pieces ? sent : between(random, written, sent);
    const body = BYTES.subarray(written, end);
    await wire.write(piece === 1 ? Buffer.concat([head, body]) : body);
    written = end;
  }
  if (whole) {
    await wire.status();
  } else if (target.early && random() < 0.6) {
    await wire.status();
    if (random() < 0.5) await wire.write(BYTES.subarray(0, between(random, 1, 512 * KIB)));
  }
  wire.destroy();
  await wire.closed;
}

/**
 * The crash's own sequence on a raw connection: an upload that grows the connection's window,
 * then a refused request whose head and first ~1 MiB go out in one write, so that one socket
 * read holds the head and far more than the body's high-water mark.
 */
async function refusedOnWarmConnection(
  context: Context,
  target: Target,
  random: Random,
): Promise<void> {
  const wire = new Wire(context.server.port);
  const warm = BYTES.subarray(0, 2 * MIB);
  const warmPath = `/blob/${context.workspaceId}/warm.bin?${context.writeSas}`;
  await wire.write(
    Buffer.concat([
      requestHead('PUT', warmPath, {
        'x-ms-blob-type': 'BlockBlob',
        'content-length': warm.length,
      }),
      warm,
    ]),
  );
  const answer = await wire.answer();
  assert.is(answer?.status, 201, `warming the connection: ${answer?.body.toString()}`);
  const declared = Math.max(target.declared(random), MIB);
  const head = requestHead(target.method, target.path, {
    ...target.headers,
    'content-length': declared,
  });
  await wire.write(Buffer.concat([head, BYTES.subarray(0, Math.min(declared, MIB))]));
  if (random() < 0.5) await wire.status();
  wire.destroy();
  await wire.closed;
}

/**
 * A client like the Azure SDK's: one keep-alive agent whose connections are reused for
 * uploads that succeed, uploads refused while their body is still going out, and reads.
 */
async function keepAliveClient(context: Context, random: Random, requests: number): Promise<void> {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 2 });
  const refusing = targets(context).filter((target) => target.early && !target.bySize);
  const send = (method: string, path: string, headers: Record<string, string>, body?: Buffer) =>
    new Promise<void>((resolve) => {
      const request = httpRequest({
        host: '127.0.0.1',
        port: context.server.port,
        method,
        path,
        agent,
        headers: body ? { ...headers, 'content-length': String(body.length) } : headers,
      });
      // A refusal closes the connection under a body still being written: EPIPE, ECONNRESET.
      request.on('error', () => resolve());
      request.on('close', () => resolve());
      request.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve());
        response.on('error', () => resolve());
      });
      request.end(body);
    });
  try {
    for (let index = 0; index < requests; index++) {
      const roll = random();
      if (roll < 0.35) {
        await send(
          'PUT',
          `/blob/${context.workspaceId}/kept/${index % 3}.bin?${context.writeSas}`,
          { 'x-ms-blob-type': 'BlockBlob' },
          BYTES.subarray(0, between(random, 64 * KIB, 2 * MIB)),
        );
      } else if (roll < 0.8) {
        const target = pick(random, refusing);
        // Declares what it sends: the SDK sends whole blocks.
        const body = BYTES.subarray(0, between(random, 256 * KIB, 2 * MIB));
        await send(target.method, target.path, target.headers, body);
      } else {
        await send('GET', '/health', {});
      }
    }
  } finally {
    agent.destroy();
  }
}

/**
 * A download the client leaves: after the headers, after some bytes, or after not reading at
 * all while the server has more to write (its writes wait on the socket).
 */
function cutDownload(context: Context, random: Random): Promise<void> {
  const { workspaceId: ws, owner, readSas } = context;
  const byLink = random() < 0.5;
  const path = byLink ? `/blob/${ws}/big.bin?${readSas}` : `/workspaces/${ws}/files/big.bin`;
  const headers: Record<string, string> = byLink
    ? {}
    : { authorization: `Bearer ${owner.api_token}` };
  if (random() < 0.3) headers.range = `bytes=${between(random, 0, MIB)}-`;
  const method = random() < 0.1 ? 'HEAD' : 'GET';
  const stopAfter = pick(random, [0, 1, between(random, 1, MIB)]);
  return new Promise((resolve) => {
    const request = httpRequest({
      host: '127.0.0.1',
      port: context.server.port,
      method,
      path,
      headers,
      agent: false,
    });
    request.on('error', () => undefined);
    request.on('close', () => resolve());
    request.on('response', (response) => {
      response.on('error', () => undefined);
      if (stopAfter === 0) return void request.destroy();
      let seen = 0;
      response.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen >= stopAfter) request.destroy();
      });
      // HEAD, or a short range read whole: the answer simply ends.
      response.on('end', () => request.destroy());
    });
    request.end();
  });
}

for (const engine of enginesHere(import.meta.filename)) {
  const test = suite<Context>(`a client cannot crash the service (${engine})`);

  test.before(async (context) => {
    // The server runs in this process: a crash in it would end the run. Caught, it fails the
    // test that caused it.
    context.crashes = [];
    const onCrash = (error: unknown) => context.crashes.push(error);
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    context.stopWatching = () => {
      process.off('uncaughtException', onCrash);
      process.off('unhandledRejection', onCrash);
    };
    context.server = await startTestServer({ httpEngine: engine, storageQuotaBytes: QUOTA });
    const { server } = context;
    context.owner = await server.signUp();
    context.stranger = await server.signUp();
    context.workspaceId = await newWorkspace(server, context.owner);
    const saved = await fetch(server.url(`/workspaces/${context.workspaceId}/files/big.bin`), {
      method: 'PUT',
      headers: { authorization: `Bearer ${context.owner.api_token}` },
      body: BYTES,
    });
    assert.is(saved.status, 201, await saved.text());
    const link = async (access: string) => {
      const answer = await server.post(
        `/workspaces/${context.workspaceId}/sas`,
        { access },
        context.owner.api_token,
      );
      assert.is(answer.status, 200, await answer.clone().text());
      return ((await answer.json()) as { sas_token: string }).sas_token.replace(/^\?/, '');
    };
    context.readSas = await link('read');
    context.writeSas = await link('readwrite');
  });

  test.after(async (context) => {
    await context.server.close();
    context.stopWatching();
  });

  /** Fails with what the process would have died of (each message once), if anything. */
  const assertNoCrash = (context: Context) =>
    assert.equal(
      [
        ...new Set(
          context.crashes.map((error) => (error instanceof Error ? error.message : String(error))),
        ),
      ],
      [],
      `the process would have died ${context.crashes.length} times (STRESS_SEED=${SEED})`,
    );

  /** The service still answers, saves and reads, and holds no request open. */
  async function assertAlive(context: Context): Promise<void> {
    const { server, owner, workspaceId } = context;
    assert.is((await server.get('/health')).status, 200);
    const bytes = BYTES.subarray(0, 300 * KIB);
    const path = `/workspaces/${workspaceId}/files/after.bin`;
    const saved = await fetch(server.url(path), {
      method: 'PUT',
      headers: { authorization: `Bearer ${owner.api_token}` },
      body: bytes,
    });
    assert.is(saved.status, 201, await saved.text());
    const read = await server.get(path, owner.api_token);
    assert.ok(Buffer.from(await read.arrayBuffer()).equals(bytes), 'the file reads back whole');
    await until(() => server.openHttpRequests() === 0, 'open requests to return to 0');
  }

  test('each refusal of the stress is answered from the head, while its body is still to come', async (context) => {
    for (const target of targets(context).filter((each) => each.early)) {
      const wire = new Wire(context.server.port);
      const head = requestHead(target.method, target.path, {
        ...target.headers,
        'content-length': target.declared(() => 0.99),
      });
      await wire.write(Buffer.concat([head, BYTES.subarray(0, 16 * KIB)]));
      const status = await wire.status();
      wire.destroy();
      assert.ok(target.statuses.includes(status), `${target.name} answered ${status}`);
    }
    assertNoCrash(context);
  });

  test('a refused upload on a warmed kept-alive connection leaves the process alive', async (context) => {
    const random = seeded(SEED);
    for (const target of targets(context).filter((each) => each.early)) {
      await refusedOnWarmConnection(context, target, random);
    }
    assertNoCrash(context);
    await assertAlive(context);
  });

  test('thousands of refused, cut and abandoned uploads and downloads leave it alive and idle', async (context) => {
    const random = seeded(SEED + 1);
    const all = targets(context);
    const refusing = all.filter((target) => target.early);
    await Promise.all([
      inParallel(2000, 12, () => cutUpload(context, pick(random, all), random)),
      inParallel(12, 2, () => refusedOnWarmConnection(context, pick(random, refusing), random)),
      inParallel(3, 3, () => keepAliveClient(context, random, 30)),
      inParallel(200, 4, () => cutDownload(context, random)),
    ]);
    assertNoCrash(context);
    await assertAlive(context);
  });

  test('the Azure SDK with its kept-alive connections: uploads, downloads, then an upload through a read-only link', async (context) => {
    const { server, owner, workspaceId, readSas } = context;
    const noRetry = { retryOptions: { maxTries: 1, tryTimeoutInMs: 20_000 } };
    const fileLink = async (path: string) => {
      const answer = await server.post(
        `/workspaces/${workspaceId}/sas`,
        { access: 'readwrite', path },
        owner.api_token,
      );
      return ((await answer.json()) as { file_url: string }).file_url;
    };
    const upload = (url: string) => new BlockBlobClient(url, new AnonymousCredential(), noRetry);
    await upload(await fileLink('sdk/a.bin')).uploadData(randomBytes(MIB));
    await upload(await fileLink('sdk/b.bin')).uploadData(randomBytes(5 * MIB), {
      maxSingleShotSize: MIB,
      blockSize: MIB,
      concurrency: 5,
    });
    const container = new ContainerClient(
      `${server.url(`/blob/${workspaceId}`)}?${readSas}`,
      new AnonymousCredential(),
      noRetry,
    );
    assert.is((await container.getBlockBlobClient('sdk/b.bin').downloadToBuffer()).length, 5 * MIB);
    const ranged = await container.getBlockBlobClient('sdk/b.bin').download(1000, 300_000);
    let rangedBytes = 0;
    for await (const chunk of ranged.readableStreamBody as AsyncIterable<Buffer>) {
      rangedBytes += chunk.length;
    }
    assert.is(rangedBytes, 300_000);
    const refusals: unknown[] = [];
    for (const [name, size, options] of [
      ['sdk/x.bin', 64 * KIB, {}],
      ['sdk/a.bin', 4 * KIB, {}],
      ['sdk/x.bin', 2 * MIB, { maxSingleShotSize: MIB, blockSize: MIB, concurrency: 1 }],
    ] as const) {
      try {
        await container.getBlockBlobClient(name).uploadData(randomBytes(size), options);
        refusals.push('accepted');
      } catch (error) {
        // 403, or the connection closed under the rest of the body: either is a refusal.
        refusals.push((error as { statusCode?: number }).statusCode ?? 'closed');
      }
    }
    assert.ok(!refusals.includes('accepted'), `no upload through a read link: ${refusals}`);
    assertNoCrash(context);
    await assertAlive(context);
  });

  test.run();
}
