/**
 * The S3-compatible blob store, through the `minio` client: one object per blob at
 * `<prefix><aa>/<bb>/<sha256>`.
 *
 * A put first streams the bytes to a local temporary file while hashing them (under
 * `stagingDir`), and only then uploads that file, with its length known, straight to its
 * content address. Why: the address is the hash, which is known only at the end; and minio,
 * given a stream of unknown length, would buffer parts sized for a 5 TB object in memory. With the
 * length known and `partSize` at S3's 5 MB minimum, the client holds at most one 5 MB part per
 * upload (one PUT up to 5 MB, multipart above). S3 makes an object visible only when its PUT or
 * multipart upload completes, so no partial blob is ever visible; an upload that fails half way
 * leaves at most an incomplete multipart upload, invisible, which a bucket lifecycle rule
 * (AbortIncompleteMultipartUpload) clears. Refusals and aborts happen while staging, before S3 is
 * touched.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import type { Agent, IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Client } from 'minio';
import {
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
  BlobStoreFullError,
  BlobStoreUnavailableError,
  fileSystemFailure,
} from './errors.ts';
import { transportWithTimeout } from './s3-transport.ts';
import { parseS3Url } from './s3-url.ts';
import { openTempFile, writeTempFile, type OpenTempFile } from './temp-file.ts';

/** S3's smallest multipart part: the most a put holds in memory. */
const PART_BYTES = 5 * 1024 * 1024;

export interface S3BlobStoreOptions {
  /** `http(s)://ACCESS_KEY:SECRET_KEY@host:port/bucket` (see s3-url.ts). */
  s3Url: string;
  /** A local directory for the bytes of puts in progress, e.g. `DATA_DIR/blob-staging`. */
  stagingDir: string;
  openTempFile?: OpenTempFile;
  /** The HTTP(S) agent the client connects through (tests count its sockets); default Node's. */
  transportAgent?: Agent;
  /** How long a request may wait in silence for S3 (s3-transport.ts); default 30 s. */
  requestTimeoutMs?: number;
}

export async function openS3BlobStore(options: S3BlobStoreOptions): Promise<BlobStore> {
  const location = parseS3Url(options.s3Url);
  const { bucket, prefix } = location;
  const client = new Client({
    endPoint: location.endPoint,
    port: location.port,
    useSSL: location.useSSL,
    accessKey: location.accessKey,
    secretKey: location.secretKey,
    region: location.region,
    pathStyle: true,
    partSize: PART_BYTES,
    transport: transportWithTimeout(location.useSSL, options.requestTimeoutMs ?? 30_000),
    ...(options.transportAgent ? { transportAgent: options.transportAgent } : {}),
  });
  const stagingDir = options.stagingDir;
  const openFile = options.openTempFile ?? openTempFile;
  try {
    await mkdir(stagingDir, { recursive: true });
  } catch (error) {
    throw fileSystemFailure(error);
  }
  const keyOf = (sha256: string) => prefix + blobKey(sha256);

  async function statBlob(sha256: string): Promise<BlobStat | null> {
    const key = keyOf(sha256);
    try {
      const info = await client.statObject(bucket, key);
      return { size: info.size, modifiedAt: info.lastModified };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw s3Failure(error);
    }
  }

  async function put(source: AsyncIterable<Uint8Array>, put: PutOptions): Promise<StoredBlob> {
    const tempPath = join(stagingDir, randomUUID());
    const blob = await writeTempFile(source, { ...put, path: tempPath, sync: false, openFile });
    try {
      put.signal?.throwIfAborted();
      await put.onHashed?.(blob);
      // Bytes stored already are uploaded again all the same: the new Last-Modified tells the
      // collector of unused blobs that a save wants them now. (A copy of the object onto itself
      // would spare the upload on S3 itself, but not every S3-compatible server refreshes
      // Last-Modified on a copy; s3rver, which the tests run on, does not.)
      try {
        await client.putObject(bucket, keyOf(blob.sha256), createReadStream(tempPath), blob.size, {
          'Content-Type': 'application/octet-stream',
        });
      } catch (error) {
        throw s3Failure(error);
      }
      return blob;
    } finally {
      await rm(tempPath, { force: true }).catch(() => undefined);
    }
  }

  async function openBlob(sha256: string, range?: ByteRange): Promise<BlobContent> {
    const key = keyOf(sha256);
    resolveRange(Number.MAX_SAFE_INTEGER, range); // a malformed range throws before any request
    let response: IncomingMessage;
    try {
      const start = range?.start ?? 0;
      const length = range?.end === undefined ? 0 : range.end - start + 1;
      response = (await client.getPartialObject(bucket, key, start, length)) as IncomingMessage;
    } catch (error) {
      if (isNotFound(error)) throw new BlobNotFoundError(sha256);
      if (codeOf(error) === 'InvalidRange') {
        const found = await statBlob(sha256);
        if (!found) throw new BlobNotFoundError(sha256);
        throw new BlobRangeNotSatisfiableError(found.size);
      }
      throw s3Failure(error);
    }
    const { offset, length, blobSize } = sliceOf(response);
    // A server that ignores the range (or an empty blob, read with no range header) answers
    // the whole blob: check the slice is the one asked for.
    const expected = resolveRange(blobSize, range);
    if (!expected || expected.offset !== offset || expected.length !== length) {
      response.destroy();
      if (!expected) throw new BlobRangeNotSatisfiableError(blobSize);
      throw new BlobStoreUnavailableError('range not honoured');
    }
    return responseContent(response, offset, length, blobSize);
  }

  async function deleteBlob(sha256: string): Promise<void> {
    const key = keyOf(sha256);
    try {
      await client.removeObject(bucket, key);
    } catch (error) {
      if (!isNotFound(error)) throw s3Failure(error);
    }
  }

  async function detach(sha256: string): Promise<() => Promise<void>> {
    await deleteBlob(sha256);
    return async () => undefined;
  }

  async function* list(): AsyncIterable<string> {
    try {
      for await (const item of client.listObjectsV2(bucket, prefix, true)) {
        const name = (item as { name?: string }).name;
        if (!name) continue;
        const sha256 = name.slice(name.lastIndexOf('/') + 1);
        if (isSha256(sha256) && name === prefix + blobKey(sha256)) yield sha256;
      }
    } catch (error) {
      throw s3Failure(error);
    }
  }

  return { kind: 's3', put, open: openBlob, stat: statBlob, delete: deleteBlob, detach, list };
}

/** Which bytes of the blob a GET answered: from Content-Range (206) or Content-Length (200). */
function sliceOf(response: IncomingMessage): { offset: number; length: number; blobSize: number } {
  const length = Number(response.headers['content-length'] ?? NaN);
  const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.headers['content-range'] ?? '');
  if (response.statusCode === 206 && range)
    return { offset: Number(range[1]), length, blobSize: Number(range[3]) };
  return { offset: 0, length, blobSize: length };
}

/** The response's body as a blob read; stopping early destroys it (and its connection). */
function responseContent(
  response: IncomingMessage,
  offset: number,
  length: number,
  blobSize: number,
): BlobContent {
  let iterated = false;
  async function* chunks(): AsyncGenerator<Uint8Array> {
    let received = 0;
    try {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        received += chunk.length;
        yield chunk;
      }
    } catch (error) {
      throw s3Failure(error);
    } finally {
      response.destroy();
    }
    if (received !== length) throw new BlobStoreUnavailableError('blob shorter than its size');
  }
  return {
    offset,
    length,
    blobSize,
    close: async () => {
      response.destroy();
    },
    [Symbol.asyncIterator]() {
      if (iterated || response.destroyed) throw new Error('a blob read is iterated once');
      iterated = true;
      return chunks();
    },
  };
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function isNotFound(error: unknown): boolean {
  const code = codeOf(error);
  return code === 'NotFound' || code === 'NoSuchKey';
}

/** S3 codes that mean the store has no room. */
const FULL = new Set(['XMinioStorageFull', 'QuotaExceeded']);

/** A failed S3 call as the store's typed error: the network, or the server refusing. */
function s3Failure(error: unknown): BlobStoreFullError | BlobStoreUnavailableError {
  if (error instanceof BlobStoreFullError || error instanceof BlobStoreUnavailableError)
    return error;
  const code = codeOf(error) ?? 'S3 error';
  return FULL.has(code) ? new BlobStoreFullError(code) : new BlobStoreUnavailableError(code);
}
