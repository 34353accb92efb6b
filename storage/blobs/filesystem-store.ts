/**
 * The filesystem blob store: `<root>/<aa>/<bb>/<sha256>`, one file per blob. A put writes to
 * `<root>/tmp/`, fsyncs, renames into place (atomic on one filesystem) and fsyncs the directory,
 * so a crash leaves either the whole blob or none of it visible; a stray temporary file is all a
 * crash can leave, and those are swept at the next start.
 */
import { randomUUID } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  BLOB_CHUNK_BYTES,
  blobKey,
  isSha256,
  resolveRange,
  type BlobContent,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  type PutOptions,
  type StoredBlob,
} from './blob-store.ts';
import {
  BlobNotFoundError,
  BlobRangeNotSatisfiableError,
  BlobStoreUnavailableError,
  fileSystemFailure,
  systemErrorCode,
} from './errors.ts';
import { openTempFile, writeTempFile, type OpenTempFile } from './temp-file.ts';

/** Temporary files older than this at start-up were left by a crash (no put lasts a day). */
const STALE_TEMP_MS = 24 * 60 * 60 * 1000;

export interface FilesystemBlobStoreOptions {
  /** The store's directory, e.g. `DATA_DIR/blobs`; made if missing. */
  root: string;
  /** How temporary files are opened; tests pass one whose disk fills up. */
  openTempFile?: OpenTempFile;
}

export async function openFilesystemBlobStore(
  options: FilesystemBlobStoreOptions,
): Promise<BlobStore> {
  const root = options.root;
  const tempDir = join(root, 'tmp');
  const openFile = options.openTempFile ?? openTempFile;
  try {
    await mkdir(tempDir, { recursive: true });
    await sweepStaleTemps(tempDir);
  } catch (error) {
    throw fileSystemFailure(error);
  }

  const pathOf = (sha256: string) => join(root, blobKey(sha256));

  async function put(source: AsyncIterable<Uint8Array>, put: PutOptions): Promise<StoredBlob> {
    const tempPath = join(tempDir, randomUUID());
    const blob = await writeTempFile(source, { ...put, path: tempPath, sync: true, openFile });
    try {
      put.signal?.throwIfAborted();
      await put.onHashed?.(blob);
    } catch (error) {
      await rm(tempPath, { force: true }).catch(() => undefined);
      throw error;
    }
    try {
      const target = pathOf(blob.sha256);
      // Bytes stored already are replaced by the same bytes, atomically: the new file's mtime
      // tells the collector of unused blobs that a save wants them now. (A reader of the old file
      // keeps its handle on the same bytes.)
      const dir = dirname(target);
      const created = await mkdir(dir, { recursive: true });
      await rename(tempPath, target);
      // New directories must be durable in their parents too, or the rename could be lost. The
      // fsyncs go together: on one filesystem they share a journal commit.
      const synced = [syncDirectory(dir)];
      if (created !== undefined) synced.push(syncDirectory(dirname(dir)));
      if (created !== undefined && created !== dir) synced.push(syncDirectory(root));
      await Promise.all(synced);
      return blob;
    } catch (error) {
      await rm(tempPath, { force: true }).catch(() => undefined);
      if (put.signal?.aborted && error === put.signal.reason) throw error;
      throw fileSystemFailure(error);
    }
  }

  async function openBlob(sha256: string, range?: ByteRange): Promise<BlobContent> {
    const path = pathOf(sha256);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if (systemErrorCode(error) === 'ENOENT') throw new BlobNotFoundError(sha256);
      throw fileSystemFailure(error);
    }
    try {
      const { size } = await handle.stat().catch((error: unknown) => {
        throw fileSystemFailure(error);
      });
      const slice = resolveRange(size, range);
      if (!slice) throw new BlobRangeNotSatisfiableError(size);
      return fileContent(handle, slice.offset, slice.length, size);
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  async function statBlob(sha256: string): Promise<BlobStat | null> {
    const path = pathOf(sha256);
    try {
      const info = await stat(path);
      return { size: info.size, modifiedAt: info.mtime };
    } catch (error) {
      if (systemErrorCode(error) === 'ENOENT') return null;
      throw fileSystemFailure(error);
    }
  }

  async function deleteBlob(sha256: string): Promise<void> {
    const path = pathOf(sha256);
    try {
      await unlink(path);
    } catch (error) {
      if (systemErrorCode(error) !== 'ENOENT') throw fileSystemFailure(error);
    }
  }

  /**
   * A rename into the temporary directory takes the blob from its address at once (metadata
   * only); the unlink, which frees the file's blocks, comes after. A crash between them leaves a
   * temporary file, swept at a later start like any other.
   */
  async function detach(sha256: string): Promise<() => Promise<void>> {
    const path = pathOf(sha256);
    const removed = join(tempDir, `${randomUUID()}.removed`);
    try {
      await rename(path, removed);
    } catch (error) {
      if (systemErrorCode(error) === 'ENOENT') return async () => undefined;
      throw fileSystemFailure(error);
    }
    return () => rm(removed, { force: true }).catch(() => undefined);
  }

  async function* list(): AsyncIterable<string> {
    const twoHex = /^[0-9a-f]{2}$/;
    try {
      for (const first of await readdir(root)) {
        if (!twoHex.test(first)) continue;
        for (const second of await readdirIfAny(join(root, first))) {
          if (!twoHex.test(second)) continue;
          for (const name of await readdirIfAny(join(root, first, second))) {
            if (isSha256(name) && name.startsWith(first + second)) yield name;
          }
        }
      }
    } catch (error) {
      throw fileSystemFailure(error);
    }
  }

  return {
    kind: 'filesystem',
    put,
    open: openBlob,
    stat: statBlob,
    delete: deleteBlob,
    detach,
    list,
  };
}

/** A read of `length` bytes from `offset`, chunk by chunk as asked; the handle closes at the end. */
function fileContent(
  handle: FileHandle,
  offset: number,
  length: number,
  blobSize: number,
): BlobContent {
  let closed = false;
  let iterated = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      let position = offset;
      let remaining = length;
      while (remaining > 0) {
        // A fresh buffer per chunk: the consumer may keep what it was given.
        const buffer = Buffer.allocUnsafe(Math.min(BLOB_CHUNK_BYTES, remaining));
        let bytesRead: number;
        try {
          ({ bytesRead } = await handle.read(buffer, 0, buffer.length, position));
        } catch (error) {
          throw fileSystemFailure(error);
        }
        if (bytesRead === 0) throw new BlobStoreUnavailableError('blob shorter than its size');
        position += bytesRead;
        remaining -= bytesRead;
        yield buffer.subarray(0, bytesRead);
      }
    } finally {
      await close();
    }
  }
  return {
    offset,
    length,
    blobSize,
    close,
    [Symbol.asyncIterator]() {
      if (iterated || closed) throw new Error('a blob read is iterated once');
      iterated = true;
      return chunks();
    },
  };
}

async function readdirIfAny(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    // A directory removed while listing, or a stray file where a directory was expected.
    if (systemErrorCode(error) === 'ENOENT' || systemErrorCode(error) === 'ENOTDIR') return [];
    throw error;
  }
}

/** Makes a directory's entries (a rename into it) durable. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function sweepStaleTemps(tempDir: string): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(tempDir)) {
    const path = join(tempDir, name);
    const info = await stat(path).catch(() => null);
    if (info && now - info.mtimeMs > STALE_TEMP_MS) await rm(path, { force: true });
  }
}
