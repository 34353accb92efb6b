/**
 * The blob store: bytes kept by their content. A file's every version is one blob, named by the
 * hex SHA-256 of its bytes; the database says which paths point at which blobs, the store only
 * keeps bytes. Two stores keep this same contract (test/storage/blobs/contract.ts): a directory
 * on the local filesystem and an S3-compatible bucket.
 *
 * Memory stays bounded whatever the blob's size: bytes go through in chunks of at most
 * `BLOB_CHUNK_BYTES` and never sit whole in memory.
 */

/** The size of the chunks a store reads and writes in. */
export const BLOB_CHUNK_BYTES = 64 * 1024;

/** The address of a blob: the lower-case hex SHA-256 of its bytes. */
export type Sha256 = string;

export interface PutOptions {
  /** Bytes past this refuse the blob with `BlobTooLargeError` (nothing is kept). */
  maxBytes: number;
  /** Aborting stops the put at once, rejects with the signal's reason and keeps nothing. */
  signal?: AbortSignal;
  /**
   * Called once every byte is in and hashed, before the blob becomes visible under its address:
   * an upload names its blob there, so that nothing deletes the blob between its becoming
   * visible and its row's commit (actors/files/upload-reservations.ts). A rejection refuses the put,
   * which then keeps nothing.
   */
  onHashed?: (blob: StoredBlob) => Promise<void>;
}

/** A blob's hashes, computed as its bytes stream in. */
export interface BlobDigests {
  /** Hex: the blob's key. */
  sha256: Sha256;
  /** Base64 of the 16 bytes, as Content-MD5 (RFC 1864) carries it. */
  md5: string;
}

export interface StoredBlob extends BlobDigests {
  size: number;
}

export interface BlobStat {
  size: number;
  /**
   * When the blob was last put (the first time or again), by the store's own clock: the file's
   * mtime, the object's Last-Modified (whole seconds on S3).
   */
  modifiedAt: Date;
}

/** A byte range of a blob, both ends inclusive (as in HTTP `Range: bytes=start-end`). */
export interface ByteRange {
  start: number;
  /** Clamped to the blob's last byte, as HTTP does; omitted: to the end. */
  end?: number;
}

/**
 * The bytes of one read of a blob. Iterate it once (chunks are read as they are asked for, so a
 * slow consumer slows the read rather than filling memory); stopping early, by `break` or a
 * throw, releases the file handle or connection at once. A read that is not iterated must be
 * `close()`d.
 */
export interface BlobContent extends AsyncIterable<Uint8Array> {
  /** Where this read starts in the blob. */
  readonly offset: number;
  /** How many bytes this read yields. */
  readonly length: number;
  /** The whole blob's size (for `Content-Range`). */
  readonly blobSize: number;
  /** Releases the handle without reading (harmless after the iteration ended). */
  close(): Promise<void>;
}

export interface BlobStore {
  readonly kind: 'filesystem' | 's3';
  /**
   * Streams `source` into the store while hashing it, then makes it visible under its SHA-256.
   * Either the whole blob becomes visible or nothing does: on a refusal, an abort, a failing
   * source or a failing store, no partial blob is ever visible and the temporary copy is gone.
   * Putting bytes already stored is harmless and answers the same address; it makes the blob's
   * `modifiedAt` now again, because the collector of unused blobs spares blobs modified lately
   * (actors/files/blob-collector.ts): a save in progress puts its bytes before its row commits.
   * Rejects with `BlobTooLargeError`, `BlobStoreFullError`, `BlobStoreUnavailableError`, the
   * signal's reason, or the source's own error.
   */
  put(source: AsyncIterable<Uint8Array>, options: PutOptions): Promise<StoredBlob>;
  /**
   * Opens the blob for reading, whole or a range of it. Rejects with `BlobNotFoundError` or,
   * when `range.start` lies past the last byte, `BlobRangeNotSatisfiableError`.
   */
  open(sha256: Sha256, range?: ByteRange): Promise<BlobContent>;
  /** The blob's size and last put, or null when the store does not hold it. */
  stat(sha256: Sha256): Promise<BlobStat | null>;
  /** Removes the blob; removing one the store does not hold is not an error. */
  delete(sha256: Sha256): Promise<void>;
  /**
   * Takes the blob from its address at once, as `delete` does, and answers the rest of the
   * removal (giving its room back to the disk), which never rejects: run it after the lock the
   * caller decided under (actors/files/blob-collector.ts), so that the lock, and the database
   * connection that holds it, is not held while the disk frees a large file (tens of
   * milliseconds for 100 MiB). A bucket has nothing left to do.
   */
  detach(sha256: Sha256): Promise<() => Promise<void>>;
  /** Every blob the store holds, in no particular order (for the collector of unused blobs). */
  list(): AsyncIterable<Sha256>;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

export function isSha256(value: string): boolean {
  return SHA256_HEX.test(value);
}

/** A malformed address is the caller's bug, never an agent's input: it throws a TypeError. */
function assertSha256(value: string): void {
  if (!SHA256_HEX.test(value)) throw new TypeError(`not a hex SHA-256: ${JSON.stringify(value)}`);
}

/** Where a blob lives inside a store: `<aa>/<bb>/<sha256>`, so no directory grows too large. */
export function blobKey(sha256: Sha256): string {
  assertSha256(sha256);
  return `${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`;
}

/**
 * The slice of a `blobSize`-byte blob that `range` asks for, or null when it starts past the
 * last byte. An absent range is the whole blob (an empty blob reads as zero bytes).
 */
export function resolveRange(
  blobSize: number,
  range: ByteRange | undefined,
): { offset: number; length: number } | null {
  if (!range) return { offset: 0, length: blobSize };
  const { start, end } = range;
  if (
    !Number.isSafeInteger(start) ||
    start < 0 ||
    (end !== undefined && !Number.isSafeInteger(end))
  )
    throw new TypeError(`not a byte range: ${JSON.stringify(range)}`);
  if (end !== undefined && end < start) throw new TypeError(`range ends before it starts`);
  if (start >= blobSize) return null;
  const last = Math.min(end ?? blobSize - 1, blobSize - 1);
  return { offset: start, length: last - start + 1 };
}
