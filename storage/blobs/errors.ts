/**
 * What a blob store refuses with. Each maps to one answer of the service: too large 413, full
 * 507, unavailable 503 (with Retry-After), not found 404, range 416. Messages never name a
 * server, a bucket, a key or a credential: they may be logged or shown.
 */

/** The bytes went past `maxBytes`; nothing was kept. */
export class BlobTooLargeError extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`The content is larger than the ${maxBytes} bytes allowed.`);
    this.name = 'BlobTooLargeError';
    this.maxBytes = maxBytes;
  }
}

/** The store has no room (ENOSPC, EDQUOT); nothing was kept. */
export class BlobStoreFullError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`The file store is full (${reason}); nothing was saved.`);
    this.name = 'BlobStoreFullError';
    this.reason = reason;
  }
}

/** The store cannot be reached or failed (I/O error, S3 down or refusing); nothing was kept. */
export class BlobStoreUnavailableError extends Error {
  /** A short machine-readable cause for logs, e.g. `EIO`, `ECONNREFUSED`, `AccessDenied`. */
  readonly reason: string;
  constructor(reason: string) {
    super(`The file store cannot be reached (${reason}); try again in a moment.`);
    this.name = 'BlobStoreUnavailableError';
    this.reason = reason;
  }
}

export class BlobNotFoundError extends Error {
  readonly sha256: string;
  constructor(sha256: string) {
    super(`No blob ${sha256} in the store.`);
    this.name = 'BlobNotFoundError';
    this.sha256 = sha256;
  }
}

/** The range starts past the blob's last byte. */
export class BlobRangeNotSatisfiableError extends Error {
  readonly blobSize: number;
  constructor(blobSize: number) {
    super(`The range lies outside the ${blobSize} bytes of the content.`);
    this.name = 'BlobRangeNotSatisfiableError';
    this.blobSize = blobSize;
  }
}

const FULL = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/** The code of a Node system error (`ENOSPC`, ...), if `error` is one. */
export function systemErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A failed filesystem call as the store's typed error. */
export function fileSystemFailure(error: unknown): BlobStoreFullError | BlobStoreUnavailableError {
  const code = systemErrorCode(error) ?? 'I/O error';
  return FULL.has(code) ? new BlobStoreFullError(code) : new BlobStoreUnavailableError(code);
}
