import { createHash, randomBytes } from 'node:crypto';
import {
  fstatSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BLOB_CHUNK_BYTES, blobKey } from '../../../storage/blobs/blob-store.ts';
import { BlobStoreFullError, BlobStoreUnavailableError } from '../../../storage/blobs/errors.ts';
import { openFilesystemBlobStore } from '../../../storage/blobs/filesystem-store.ts';
import { openTempFile, type OpenTempFile } from '../../../storage/blobs/temp-file.ts';
import { filesUnder } from '../../helpers/disk-files.ts';
import { blobStoreContract, type BlobStoreHarness } from './contract.ts';
import { chunksOf, readAll } from './sources.ts';

/** This process's open file descriptors that point into `dir`. */
function descriptorsInto(dir: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir + '/');
    } catch {
      return false; // closed while looking (the readdir's own descriptor)
    }
  }).length;
}

async function openHarness(openTemp?: OpenTempFile): Promise<BlobStoreHarness & { root: string }> {
  const root = mkdtempSync(join(tmpdir(), 'agent-service-blobs-'));
  const store = await openFilesystemBlobStore({ root, openTempFile: openTemp });
  return {
    root,
    store,
    leftovers: async () => filesUnder(root).map((path) => path.slice(path.lastIndexOf('/') + 1)),
    openHandles: async () => descriptorsInto(root),
    backdate: async (sha256, at) => utimesSync(join(root, blobKey(sha256)), at, at),
    close: async () => rmSync(root, { recursive: true, force: true }),
  };
}

blobStoreContract('the filesystem', () => openHarness());

/** A disk that fills up after `room` bytes: writes past it fail with ENOSPC, as a real one would. */
function diskWithRoom(room: number, calls: string[] = []): OpenTempFile {
  return async (path) => {
    const file = await openTempFile(path);
    let written = 0;
    return {
      async write(chunk) {
        calls.push('write');
        if (written + chunk.length > room) {
          await file.write(chunk.subarray(0, room - written)); // the part that fitted
          written = room;
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), {
            code: 'ENOSPC',
          });
        }
        written += chunk.length;
        await file.write(chunk);
      },
      async sync() {
        calls.push('sync');
        await file.sync();
      },
      async close() {
        calls.push('close');
        await file.close();
      },
    };
  };
}

const test = suite<{ harness?: BlobStoreHarness & { root: string } }>('filesystem blob store');

test.after.each(async (context) => {
  await context.harness?.close();
  context.harness = undefined;
});

test('a blob lives at <root>/<aa>/<bb>/<sha256> and temporary files under tmp/', async (context) => {
  const harness = (context.harness = await openHarness());
  const { sha256 } = await harness.store.put(chunksOf(randomBytes(1_000)), { maxBytes: 10_000 });
  assert.equal(filesUnder(harness.root), [`${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`]);
  assert.ok(statSync(join(harness.root, 'tmp')).isDirectory());
});

test('the bytes are fsynced before the blob becomes visible', async (context) => {
  const calls: string[] = [];
  const harness = (context.harness = await openHarness(diskWithRoom(Infinity, calls)));
  await harness.store.put(chunksOf(randomBytes(200_000)), { maxBytes: 1_000_000 });
  assert.equal(calls.slice(-2), ['sync', 'close']);
});

test('a blob is not visible while its bytes are still arriving', async (context) => {
  const harness = (context.harness = await openHarness());
  const bytes = randomBytes(300_000);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const seenMidway: unknown[] = [];
  async function* source() {
    yield bytes.subarray(0, 200_000);
    seenMidway.push(await harness.store.stat(sha256), await harness.leftovers());
    yield bytes.subarray(200_000);
  }
  await harness.store.put(source(), { maxBytes: 1_000_000 });
  assert.is(seenMidway[0], null);
  assert.is((seenMidway[1] as string[]).length, 1, 'only the temporary file');
  assert.is.not((seenMidway[1] as string[])[0], sha256);
  assert.equal(await harness.leftovers(), [sha256]);
});

test('a full disk is BlobStoreFullError and leaves no file, whole or half', async (context) => {
  const harness = (context.harness = await openHarness(diskWithRoom(100_000)));
  const error = await harness.store
    .put(chunksOf(randomBytes(300_000)), { maxBytes: 1_000_000 })
    .catch((e: unknown) => e);
  assert.instance(error, BlobStoreFullError);
  assert.is((error as BlobStoreFullError).reason, 'ENOSPC');
  assert.equal(await harness.leftovers(), []);
  assert.is(await harness.openHandles(), 0);
});

test('a failing fsync is BlobStoreUnavailableError and leaves nothing', async (context) => {
  const failingSync: OpenTempFile = async (path) => {
    const file = await openTempFile(path);
    return {
      write: (chunk) => file.write(chunk),
      sync: async () => {
        throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
      },
      close: () => file.close(),
    };
  };
  const harness = (context.harness = await openHarness(failingSync));
  const error = await harness.store
    .put(chunksOf(randomBytes(1_000)), { maxBytes: 10_000 })
    .catch((e: unknown) => e);
  assert.instance(error, BlobStoreUnavailableError);
  assert.is((error as BlobStoreUnavailableError).reason, 'EIO');
  assert.equal(await harness.leftovers(), []);
});

test("a put's last fsync comes after all its bytes are written, whichever hash finishes last", async (context) => {
  // The blob thread writes through the descriptor; the file's size when the last fsync is
  // asked for is what that fsync makes durable. Many pieces, so the MD5 thread is still
  // hashing when the SHA-256 thread has written them all.
  const sizesAtSync: number[] = [];
  const watchedSync: OpenTempFile = async (path) => {
    const file = await openTempFile(path);
    return {
      write: (chunk) => file.write(chunk),
      sync: async () => {
        sizesAtSync.push(fstatSync(file.fd as number).size);
        await file.sync();
      },
      fd: file.fd,
      close: () => file.close(),
    };
  };
  const harness = (context.harness = await openHarness(watchedSync));
  for (const size of [1024 * 1024, 20 * 1024 * 1024 + 5]) {
    sizesAtSync.length = 0;
    const bytes = randomBytes(size);
    const blob = await harness.store.put(chunksOf(bytes, 64 * 1024), { maxBytes: size });
    assert.is(blob.md5, createHash('md5').update(bytes).digest('base64'));
    assert.is(sizesAtSync.at(-1), size);
    assert.equal(await readAll(await harness.store.open(blob.sha256)), bytes);
  }
});

test('5 MB stream through in chunks: the disk keeps up with the source, reads come in small chunks', async (context) => {
  const harness = (context.harness = await openHarness());
  const tempDir = join(harness.root, 'tmp');
  const hash = createHash('sha256');
  const md5 = createHash('md5');
  let produced = 0;
  let mostAhead = 0;
  // The source makes each chunk as it is asked for; were the store to hold the bytes, the
  // temporary file would fall behind what was produced.
  async function* fiveMegabytes() {
    for (let i = 0; i < 80; i += 1) {
      const [temp] = readdirSync(tempDir);
      const onDisk = temp ? statSync(join(tempDir, temp)).size : 0;
      mostAhead = Math.max(mostAhead, produced - onDisk);
      const chunk = randomBytes(64 * 1024);
      hash.update(chunk);
      md5.update(chunk);
      produced += chunk.length;
      yield chunk;
    }
  }
  const blob = await harness.store.put(fiveMegabytes(), { maxBytes: 100 * 1024 * 1024 });
  assert.equal(blob, {
    sha256: hash.digest('hex'),
    md5: md5.digest('base64'),
    size: 5 * 1024 * 1024,
  });
  assert.ok(mostAhead <= 2 * BLOB_CHUNK_BYTES, `the store held ${mostAhead} bytes unwritten`);

  const readHash = createHash('sha256');
  let largest = 0;
  for await (const chunk of await harness.store.open(blob.sha256)) {
    largest = Math.max(largest, chunk.length);
    readHash.update(chunk);
  }
  assert.is(readHash.digest('hex'), blob.sha256);
  assert.ok(largest <= BLOB_CHUNK_BYTES);
});

test('tiny chunks are gathered into few writes', async (context) => {
  const calls: string[] = [];
  const harness = (context.harness = await openHarness(diskWithRoom(Infinity, calls)));
  const bytes = randomBytes(200_000);
  const blob = await harness.store.put(chunksOf(bytes, 100), { maxBytes: 1_000_000 });
  assert.ok(calls.filter((call) => call === 'write').length <= 4);
  assert.ok((await readAll(await harness.store.open(blob.sha256))).equals(bytes));
});

test('temporary files a crash left a day ago are swept at start; newer ones are kept', async (context) => {
  const first = (context.harness = await openHarness());
  const stale = join(first.root, 'tmp', 'stale');
  const fresh = join(first.root, 'tmp', 'fresh');
  writeFileSync(stale, 'half a blob');
  writeFileSync(fresh, 'a put in progress');
  const twoDaysAgo = new Date(Date.now() - 2 * 24 * 60 * 60 * 1000);
  utimesSync(stale, twoDaysAgo, twoDaysAgo);
  await openFilesystemBlobStore({ root: first.root });
  assert.equal(readdirSync(join(first.root, 'tmp')), ['fresh']);
});

test.run();
