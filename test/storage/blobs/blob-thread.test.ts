/** The blob thread: what the store promises holds when the thread writes and hashes. */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { crashBlobThread } from '../../../storage/blobs/blob-thread.ts';
import { BlobStoreFullError, BlobStoreUnavailableError } from '../../../storage/blobs/errors.ts';
import { openFilesystemBlobStore } from '../../../storage/blobs/filesystem-store.ts';
import { openTempFile, type OpenTempFile } from '../../../storage/blobs/temp-file.ts';
import { filesUnder } from '../../helpers/disk-files.ts';
import { chunksOf as chunks } from './sources.ts';

const MB = 1024 * 1024;
const fdsInto = (dir: string) =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(dir + '/') || target === '/dev/full';
    } catch {
      return false;
    }
  }).length;

/**
 * The blob thread writes through the file's descriptor, past the `write` seam: these files give
 * it one. The real file, whose descriptor the thread writes to, or `fdPath`'s (/dev/full: every
 * write fails with ENOSPC); `failSync`: that fsync (counting from 1) fails with EIO.
 */
function threadWritesTo(fdPath: string | null, calls: string[], failSync = 0): OpenTempFile {
  return async (path) => {
    const file = await openTempFile(path);
    const fd = fdPath ? openSync(fdPath, 'w') : (file.fd as number);
    let syncs = 0;
    return {
      fd,
      write: async (chunk) => {
        calls.push('write');
        await file.write(chunk);
      },
      sync: async () => {
        calls.push('sync');
        if (++syncs === failSync) throw Object.assign(new Error('EIO'), { code: 'EIO' });
        await file.sync();
      },
      close: async () => {
        calls.push('close');
        if (fdPath) closeSync(fd);
        await file.close();
      },
    };
  };
}

test('a full disk under the blob thread is BlobStoreFullError and leaves no file', async () => {
  const root = mkdtempSync(join(tmpdir(), 'scratch-blobs-'));
  const store = await openFilesystemBlobStore({
    root,
    openTempFile: threadWritesTo('/dev/full', []),
  });
  const error = await store
    .put(chunks(randomBytes(3 * MB), 256 * 1024), { maxBytes: 10 * MB })
    .catch((e: unknown) => e);
  assert.instance(error, BlobStoreFullError);
  assert.is((error as BlobStoreFullError).reason, 'ENOSPC');
  assert.equal(filesUnder(root), []);
  assert.is(fdsInto(root), 0);
  rmSync(root, { recursive: true });
});

test('the thread route fsyncs as it goes and last, before close; bytes are right', async () => {
  const root = mkdtempSync(join(tmpdir(), 'scratch-blobs-'));
  const calls: string[] = [];
  const store = await openFilesystemBlobStore({ root, openTempFile: threadWritesTo(null, calls) });
  const bytes = randomBytes(20 * MB);
  const blob = await store.put(chunks(bytes, 300_000), { maxBytes: 100 * MB });
  assert.is(blob.sha256, createHash('sha256').update(bytes).digest('hex'));
  assert.is(calls.filter((c) => c === 'write').length, 0, 'written by the thread');
  assert.ok(calls.filter((c) => c === 'sync').length >= 2, calls.join());
  assert.equal(calls.slice(-2), ['sync', 'close']);
  const parts: Uint8Array[] = [];
  for await (const part of await store.open(blob.sha256)) parts.push(part);
  const stored = Buffer.concat(parts);
  assert.ok(stored.equals(bytes));
  rmSync(root, { recursive: true });
});

test('a failed background fsync fails the put', async () => {
  const root = mkdtempSync(join(tmpdir(), 'scratch-blobs-'));
  const calls: string[] = [];
  const store = await openFilesystemBlobStore({
    root,
    openTempFile: threadWritesTo(null, calls, 1),
  });
  const error = await store
    .put(chunks(randomBytes(20 * MB), 512 * 1024), { maxBytes: 100 * MB })
    .catch((e: unknown) => e);
  assert.instance(error, BlobStoreUnavailableError);
  assert.is((error as BlobStoreUnavailableError).reason, 'EIO');
  assert.equal(filesUnder(root), []);
  assert.is(fdsInto(root), 0);
  rmSync(root, { recursive: true });
});

test('a blob thread that dies fails the put in progress, and the next put works', async () => {
  const root = mkdtempSync(join(tmpdir(), 'scratch-blobs-'));
  const store = await openFilesystemBlobStore({ root });
  const bytes = randomBytes(4 * MB);
  async function* dying() {
    for (let at = 0; at < bytes.length; at += 256 * 1024) {
      if (at === 2 * MB) await crashBlobThread();
      yield bytes.subarray(at, at + 256 * 1024);
    }
  }
  const error = await store.put(dying(), { maxBytes: 10 * MB }).catch((e: unknown) => e);
  assert.instance(error, BlobStoreUnavailableError);
  assert.is((error as BlobStoreUnavailableError).reason, 'blob thread stopped');
  assert.equal(filesUnder(root), []);
  assert.is(fdsInto(root), 0);
  const again = await store.put(chunks(bytes, 256 * 1024), { maxBytes: 10 * MB });
  assert.is(again.sha256, createHash('sha256').update(bytes).digest('hex'));
  rmSync(root, { recursive: true });
});

test('a blob thread that dies while the file is synced in the background fails the put', async () => {
  const root = mkdtempSync(join(tmpdir(), 'scratch-blobs-'));
  let syncs = 0;
  const crashingSync: OpenTempFile = async (path) => {
    const file = await openTempFile(path);
    return {
      fd: file.fd,
      write: (chunk) => file.write(chunk),
      sync: async () => {
        if (++syncs === 1) await crashBlobThread();
        await file.sync();
      },
      close: () => file.close(),
    };
  };
  const store = await openFilesystemBlobStore({ root, openTempFile: crashingSync });
  const error = await store
    .put(chunks(randomBytes(20 * MB), 256 * 1024), { maxBytes: 100 * MB })
    .catch((e: unknown) => e);
  assert.instance(error, BlobStoreUnavailableError);
  assert.equal(filesUnder(root), []);
  assert.is(fdsInto(root), 0);
  rmSync(root, { recursive: true });
});

test('a blob thread that dies after the put is done harms nothing', async () => {
  const root = mkdtempSync(join(tmpdir(), 'scratch-blobs-'));
  const store = await openFilesystemBlobStore({ root });
  const bytes = randomBytes(2 * MB);
  const blob = await store.put(chunks(bytes, 256 * 1024), { maxBytes: 10 * MB });
  await crashBlobThread();
  assert.is(blob.sha256, createHash('sha256').update(bytes).digest('hex'));
  assert.equal(filesUnder(root).length, 1);
  rmSync(root, { recursive: true });
});

test('concurrent puts share the thread and each gets its own digest', async () => {
  const root = mkdtempSync(join(tmpdir(), 'scratch-blobs-'));
  const store = await openFilesystemBlobStore({ root });
  const blobs = Array.from({ length: 8 }, (_, i) => randomBytes(1 * MB + i * 70_000));
  const stored = await Promise.all(
    blobs.map((b, i) => store.put(chunks(b, 10_000 + i * 30_000), { maxBytes: 10 * MB })),
  );
  stored.forEach((s, i) =>
    assert.is(s.sha256, createHash('sha256').update(blobs[i]!).digest('hex')),
  );
  rmSync(root, { recursive: true });
});

test.run();
