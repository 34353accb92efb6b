import { ServiceError } from '../../protocol/errors.ts';
import { StorageUnavailableError } from '../../storage/database-error.ts';

/**
 * A storage failure that reached a door, as the problem its caller gets, matched by the type
 * storage/ throws; undefined for every other error, which the door answers `internal_error` and
 * logs. Every door answers through it (server/http/problem.ts asServiceError), so the doors need
 * not know storage/'s errors.
 *
 * Only the database being out of reach is the caller's to retry: nothing of the call is known
 * to be written. A DatabaseError no capability turned into a refusal (a unique key, a timed-out
 * query) is the service's own failure, and the blob store's failures are answered where the
 * bytes are known (actors/files/versions.ts, blobFailure).
 */
export function storageProblem(error: unknown): ServiceError | undefined {
  if (error instanceof StorageUnavailableError) {
    return new ServiceError(
      'storage_unavailable',
      'The database cannot be reached just now; nothing was written. Retry after the Retry-After seconds.',
    );
  }
  return undefined;
}
