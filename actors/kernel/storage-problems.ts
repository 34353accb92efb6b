import { ServiceError, type ErrorCode } from '../../protocol/errors.ts';
import {
  DatabaseError,
  DISK_FULL,
  INSUFFICIENT_RESOURCES,
  StorageOutcomeUnknownError,
  StorageUnavailableError,
} from '../../storage/database-error.ts';
import { BlobStoreFullError, BlobStoreUnavailableError } from '../../storage/blobs/errors.ts';

/** One storage failure, as the caller is told it. */
export interface StorageFailure {
  /** What storage/ throws, for the table's readers (tests, logs). */
  name: string;
  matches: (error: unknown) => boolean;
  code: ErrorCode;
  detail: string;
}

const sqlState = (error: unknown) => (error instanceof DatabaseError ? error.sqlState : undefined);
const TRANSIENT_RESOURCES: readonly string[] = INSUFFICIENT_RESOURCES;

const UNAVAILABLE =
  'The database cannot be reached just now; nothing was written. Retry after the Retry-After seconds.';
const FULL =
  "The service's storage is full; nothing was written. Retry after the Retry-After seconds, with the same Idempotency-Key for writes.";

/**
 * Every storage failure that reaches a door, in one table: the database and the blob store
 * (filesystem and S3) alike, so that a full disk is `storage_full` wherever it is full. Each
 * answer is true: `storage_unavailable` and `storage_full` only where nothing was written (the
 * transaction rolled back, or never reached the database), `outcome_unknown` where the
 * connection was lost during COMMIT and the outcome could not be learned.
 */
export const STORAGE_FAILURES: readonly StorageFailure[] = [
  {
    name: 'StorageUnavailableError',
    matches: (error) => error instanceof StorageUnavailableError,
    code: 'storage_unavailable',
    detail: UNAVAILABLE,
  },
  {
    name: 'StorageOutcomeUnknownError',
    matches: (error) => error instanceof StorageOutcomeUnknownError,
    code: 'outcome_unknown',
    detail:
      'The connection to the database was lost while this write was being committed, and whether it was stored is not known. Retry after the Retry-After seconds with the same Idempotency-Key: a stored write replays its answer, a lost one runs again. Without a key, read before you write again.',
  },
  {
    name: `DatabaseError ${DISK_FULL} (disk_full)`,
    matches: (error) => sqlState(error) === DISK_FULL,
    code: 'storage_full',
    detail: FULL,
  },
  {
    name: `DatabaseError ${INSUFFICIENT_RESOURCES.join('/')} (out of memory, connections, ...)`,
    matches: (error) => TRANSIENT_RESOURCES.includes(sqlState(error) ?? ''),
    code: 'storage_unavailable',
    detail: UNAVAILABLE,
  },
  {
    name: 'BlobStoreFullError',
    matches: (error) => error instanceof BlobStoreFullError,
    code: 'storage_full',
    detail: FULL,
  },
  {
    name: 'BlobStoreUnavailableError',
    matches: (error) => error instanceof BlobStoreUnavailableError,
    code: 'storage_unavailable',
    detail:
      "The service's file storage cannot take bytes just now; nothing was saved. Retry after the Retry-After seconds.",
  },
];

/**
 * A storage failure that reached a door, as the problem its caller gets; undefined for every
 * other error, which the door answers `internal_error` and logs. Every door answers through it
 * (server/http/problem.ts asServiceError), so the doors need not know storage/'s errors. A
 * DatabaseError the table does not name (a unique key no capability turned into a refusal) is
 * the service's own failure.
 */
export function storageProblem(error: unknown): ServiceError | undefined {
  const failure = STORAGE_FAILURES.find((candidate) => candidate.matches(error));
  return failure && new ServiceError(failure.code, failure.detail);
}
