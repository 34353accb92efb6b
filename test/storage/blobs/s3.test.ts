import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { Agent } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'minio';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { blobKey } from '../../../storage/blobs/blob-store.ts';
import { BlobStoreFullError, BlobStoreUnavailableError } from '../../../storage/blobs/errors.ts';
import { S3rver } from '../../../deploy/s3rver.ts';
import { openBlobStore } from '../../../storage/blobs/open.ts';
import { openS3BlobStore } from '../../../storage/blobs/s3-store.ts';
import { parseS3Url } from '../../../storage/blobs/s3-url.ts';
import { onTestsEnd } from '../../helpers/resources.ts';
import { blobStoreContract, type BlobStoreHarness } from './contract.ts';
import { chunksOf } from './sources.ts';

/**
 * One s3rver for the file, in this process on a free port (it checks no signatures and has no
 * multipart upload: objects here stay under the 5 MB part size). Each harness gets a new bucket.
 */
interface S3Server {
  port: number;
  client: Client;
  /** Where s3rver keeps each object, as `<bucket>/<key>._S3rver_object`. */
  directory: string;
}

let server: Promise<S3Server> | undefined;

function s3Server(): Promise<S3Server> {
  server ??= (async () => {
    const directory = mkdtempSync(join(tmpdir(), 'agent-service-s3rver-'));
    const s3rver = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
    const { port } = await s3rver.run();
    onTestsEnd(async () => {
      await s3rver.close();
      rmSync(directory, { recursive: true, force: true });
    });
    const client = new Client({
      endPoint: '127.0.0.1',
      port,
      useSSL: false,
      accessKey: 'S3RVER',
      secretKey: 'S3RVER',
      region: 'us-east-1',
      pathStyle: true,
    });
    return { port, client, directory };
  })();
  return server;
}

/**
 * The agent's sockets still carrying a request, once the busy ones have settled: each busy
 * socket is either handed back (`free`) or closed, else it is counted after 2 s.
 */
async function busySockets(agent: Agent): Promise<number> {
  const busy = () => Object.values(agent.sockets).flatMap((sockets) => sockets ?? []);
  const deadline = Date.now() + 2_000;
  while (busy().length > 0 && Date.now() < deadline) {
    const sockets = busy();
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        agent.off('free', done);
        for (const socket of sockets) socket.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, deadline - Date.now());
      agent.on('free', done);
      for (const socket of sockets) socket.on('close', done);
    });
  }
  return busy().length;
}

let buckets = 0;

async function openHarness(): Promise<BlobStoreHarness & { stagingDir: string }> {
  const { port, client, directory } = await s3Server();
  const agent = new Agent({ keepAlive: true });
  const bucket = `blobs-${++buckets}`;
  await client.makeBucket(bucket, 'us-east-1');
  const stagingDir = mkdtempSync(join(tmpdir(), 'agent-service-staging-'));
  const store = await openS3BlobStore({
    s3Url: `http://S3RVER:S3RVER@127.0.0.1:${port}/${bucket}/some/prefix`,
    stagingDir,
    transportAgent: agent,
  });
  const objects = async () => {
    const names: string[] = [];
    for await (const item of client.listObjectsV2(bucket, '', true)) {
      names.push((item as { name: string }).name);
    }
    return names;
  };
  return {
    store,
    stagingDir,
    leftovers: async () => [
      ...(await objects()).map((name) => name.slice(name.lastIndexOf('/') + 1)),
      ...readdirSync(stagingDir),
    ],
    openHandles: () => busySockets(agent),
    // s3rver answers Last-Modified from the mtime of the file it keeps the object in.
    backdate: async (sha256, at) =>
      utimesSync(join(directory, bucket, `some/prefix/${blobKey(sha256)}._S3rver_object`), at, at),
    close: async () => {
      agent.destroy();
      rmSync(stagingDir, { recursive: true, force: true });
    },
  };
}

blobStoreContract('S3 (s3rver)', openHarness);

const test = suite('S3 blob store');

test('S3_URL gives the endpoint, the keys, the bucket and a key prefix', () => {
  assert.equal(
    parseS3Url('https://AK%2F1:s%40cret@s3.example.com/files/agent/blobs?region=eu-west-1'),
    {
      endPoint: 's3.example.com',
      port: 443,
      useSSL: true,
      accessKey: 'AK/1',
      secretKey: 's@cret',
      bucket: 'files',
      prefix: 'agent/blobs/',
      region: 'eu-west-1',
    },
  );
  const plain = parseS3Url('http://ak:sk@[::1]:9000/bucket');
  assert.equal(
    [plain.endPoint, plain.port, plain.useSSL, plain.prefix, plain.region],
    ['::1', 9000, false, '', 'us-east-1'],
  );
});

test('a malformed S3_URL says what shape it wants and never repeats the secret', () => {
  for (const bad of [
    'ftp://ak:sekrit@host/b',
    'http://host:9000/b',
    'http://ak:sekrit@host:9000/',
    'sekrit',
  ]) {
    const error = (() => {
      try {
        parseS3Url(bad);
      } catch (e) {
        return e as Error;
      }
      return null;
    })();
    assert.ok(error?.message.includes('S3_URL must look like'), bad);
    assert.not.ok(error?.message.includes('sekrit'));
  }
});

test('the objects sit under the prefix at <aa>/<bb>/<sha256>', async () => {
  const { client } = await s3Server();
  const harness = await openHarness();
  const { sha256 } = await harness.store.put(chunksOf(randomBytes(100)), { maxBytes: 1_000 });
  const bucket = `blobs-${buckets}`;
  const names: string[] = [];
  for await (const item of client.listObjectsV2(bucket, '', true))
    names.push((item as { name: string }).name);
  assert.equal(names, [`some/prefix/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`]);
  assert.equal(readdirSync(harness.stagingDir), []);
  await harness.close();
});

test('an unreachable S3 is BlobStoreUnavailableError and leaves nothing staged', async () => {
  const port = await freePort();
  const stagingDir = mkdtempSync(join(tmpdir(), 'agent-service-staging-'));
  try {
    const store = await openS3BlobStore({
      s3Url: `http://ak:sk@127.0.0.1:${port}/bucket`,
      stagingDir,
    });
    const error = await store
      .put(chunksOf(randomBytes(1_000)), { maxBytes: 10_000 })
      .catch((e: unknown) => e);
    assert.instance(error, BlobStoreUnavailableError);
    assert.is((error as BlobStoreUnavailableError).reason, 'ECONNREFUSED');
    assert.not.ok((error as Error).message.includes(String(port)));
    assert.equal(readdirSync(stagingDir), []);
    assert.instance(
      await store.stat('a'.repeat(64)).catch((e: unknown) => e),
      BlobStoreUnavailableError,
    );
    assert.instance(
      await store.open('a'.repeat(64)).catch((e: unknown) => e),
      BlobStoreUnavailableError,
    );
  } finally {
    rmSync(stagingDir, { recursive: true, force: true });
  }
});

test('an S3 that never answers is BlobStoreUnavailableError once the request times out', async () => {
  const silent = createServer((socket) => sockets.add(socket));
  const sockets = new Set<Socket>();
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as { port: number };
  const stagingDir = mkdtempSync(join(tmpdir(), 'agent-service-staging-'));
  try {
    const store = await openS3BlobStore({
      s3Url: `http://ak:sk@127.0.0.1:${port}/bucket`,
      stagingDir,
      requestTimeoutMs: 200,
    });
    const error = await store
      .put(chunksOf(randomBytes(1_000)), { maxBytes: 10_000 })
      .catch((e: unknown) => e);
    assert.instance(error, BlobStoreUnavailableError);
    assert.is((error as BlobStoreUnavailableError).reason, 'ETIMEDOUT');
    assert.equal(readdirSync(stagingDir), []);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    rmSync(stagingDir, { recursive: true, force: true });
  }
});

test('a full staging disk is BlobStoreFullError and sends nothing to S3', async () => {
  const harness = await openHarness();
  const full = await openS3BlobStore({
    s3Url: `http://S3RVER:S3RVER@127.0.0.1:${(await s3Server()).port}/blobs-${buckets}`,
    stagingDir: harness.stagingDir,
    openTempFile: async () => ({
      write: async () => {
        throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' });
      },
      sync: async () => undefined,
      close: async () => undefined,
    }),
  });
  const error = await full
    .put(chunksOf(randomBytes(100_000)), { maxBytes: 1_000_000 })
    .catch((e: unknown) => e);
  assert.instance(error, BlobStoreFullError);
  assert.equal(await harness.leftovers(), []);
  await harness.close();
});

test('openBlobStore picks S3 when S3_URL is set, else the filesystem under DATA_DIR/blobs', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-data-'));
  try {
    const local = await openBlobStore({ dataDir, s3Url: undefined });
    assert.is(local.kind, 'filesystem');
    assert.ok(readdirSync(dataDir).includes('blobs'));
    const { port } = await s3Server();
    const remote = await openBlobStore({
      dataDir,
      s3Url: `http://S3RVER:S3RVER@127.0.0.1:${port}/blobs-1`,
    });
    assert.is(remote.kind, 's3');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/** A port nothing listens on: taken from the system, then let go. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

test.run();
