/**
 * Writing a blob's bytes to a temporary file while hashing them: the one place bytes come in,
 * shared by both stores. The file is the seam tests use to make the disk fail (ENOSPC): one
 * with a descriptor is written by the blob thread, one without through its own `write`.
 */
import { open, rm } from 'node:fs/promises';
import type { BlobDigests, PutOptions, StoredBlob } from './blob-store.ts';
import { BlobTooLargeError, fileSystemFailure } from './errors.ts';
import { HashedWriter } from './hashed-writer.ts';

/** A file being written: bytes appended in order, then made durable, then closed. */
export interface TempFile {
  write(chunk: Uint8Array): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
  /**
   * The file's descriptor, when the blob thread may write to it directly (the main thread then
   * only hands the bytes over); a file without one is written through `write`.
   */
  readonly fd?: number;
}

/** Creates a new file at `path` (failing if one is there). Tests pass one that fails. */
export type OpenTempFile = (path: string) => Promise<TempFile>;

export const openTempFile: OpenTempFile = async (path) => {
  const handle = await open(path, 'wx', 0o644);
  return {
    async write(chunk) {
      // A write to a regular file may be short (a full disk can take part of it): go on until
      // all of it is written or the write fails.
      for (let done = 0; done < chunk.length;) {
        const { bytesWritten } = await handle.write(chunk, done, chunk.length - done);
        done += bytesWritten;
      }
    },
    sync: () => handle.sync(),
    fd: handle.fd,
    close: () => handle.close(),
  };
};

/**
 * Streams `source` into a new file at `path`, hashing as it goes; `sync` makes it durable before
 * it is closed. On any failure the file is removed and the put rejects: with the signal's
 * reason, `BlobTooLargeError`, the source's own error, or a filesystem failure mapped to
 * `BlobStoreFullError` / `BlobStoreUnavailableError`.
 */
export async function writeTempFile(
  source: AsyncIterable<Uint8Array>,
  options: PutOptions & { path: string; sync: boolean; openFile: OpenTempFile },
): Promise<StoredBlob> {
  const { maxBytes, signal, path } = options;
  signal?.throwIfAborted();
  const file = await options.openFile(path).catch((error: unknown) => {
    throw fileSystemFailure(error);
  });
  const writer = new HashedWriter(file, options.sync);
  const iterator = source[Symbol.asyncIterator]();
  let exhausted = false;
  let size = 0;
  let digests: BlobDigests;
  try {
    for (;;) {
      const step = await nextUnlessAborted(iterator, signal);
      if (step.done) {
        exhausted = true;
        break;
      }
      const chunk = step.value;
      if (size + chunk.length > maxBytes) throw new BlobTooLargeError(maxBytes);
      size += chunk.length;
      await writer.add(chunk);
      signal?.throwIfAborted();
    }
    digests = await writer.finish();
    signal?.throwIfAborted();
  } catch (error) {
    // Tell the source we stop reading; not awaited, as a source stuck in next() would hold
    // its return() behind it forever.
    if (!exhausted) void iterator.return?.().catch(() => undefined);
    await writer.abandon();
    await file.close().catch(() => undefined);
    await rm(path, { force: true }).catch(() => undefined);
    throw error;
  }
  try {
    await file.close();
  } catch (error) {
    await rm(path, { force: true }).catch(() => undefined);
    throw fileSystemFailure(error);
  }
  return { ...digests, size };
}

/** The source's next chunk, unless the signal fires first (a stalled source cannot hold us). */
function nextUnlessAborted<T>(
  iterator: AsyncIterator<T>,
  signal: AbortSignal | undefined,
): Promise<IteratorResult<T>> {
  if (!signal) return iterator.next();
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    iterator.next().then(
      (step) => {
        signal.removeEventListener('abort', onAbort);
        resolve(step);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
