/**
 * The collector of unused blobs, and the hold a save takes so the collector spares its bytes.
 *
 * A save puts its bytes in the blob store first, outside any transaction, and commits the row
 * that uses them later, after the workspace's earlier commands. So a blob no row uses may be
 * about to be used. Two things keep such a blob:
 * - the grace: a blob put (or put again) lately is never collected;
 * - the blob's advisory lock (storage/files/blob-references.ts): the collector deletes a blob only
 *   under it, after it has looked again for a row that uses the blob; a save takes it with
 *   `holdBlob` before it commits its row, and finds out there whether the blob is still there.
 * The grace makes the second a rarity; the lock makes it safe: a save that waited past the grace
 * is refused (retry), never committed over bytes that are gone.
 *
 * Bytes known to be let go (a refused upload's, a replaced or deleted version's, a dropped staged
 * block's) do not wait for the collector: `discardUnusedBlobs` deletes them at once, under the
 * same lock; an upload in progress names its blob under that lock before the blob is visible
 * (`upload_reservations.sha256`), which counts as a use. The collector is the net for the rest.
 */
import { ServiceError } from '../../protocol/errors.ts';
import {
  isBlobReferenced,
  lockBlob,
  referencedBlobs,
} from '../../storage/files/blob-references.ts';
import type { BlobStore, Sha256 } from '../../storage/blobs/blob-store.ts';
import { BlobStoreFullError, BlobStoreUnavailableError } from '../../storage/blobs/errors.ts';
import type { Transaction } from '../../storage/driver.ts';
import type { Services } from '../kernel/services.ts';

/**
 * How long an unused blob is kept after its last put. Far longer than a save waits between
 * putting its bytes and committing its row (the upload is over by then; the commit queues
 * behind its workspace's other commands for seconds), so `holdBlob` almost never has to refuse
 * a save; and short enough that replaced bytes leave the disk within a couple of hours.
 */
export const BLOB_GRACE_MS = 60 * 60 * 1000;

/** How many listed blobs one query asks about. */
const REFERENCE_BATCH = 500;

export interface CollectedBlobs {
  /** Blobs the store listed. */
  examined: number;
  /** Blobs deleted: used by no row, and put last before `now - graceMs`. */
  collected: number;
}

/**
 * Deletes every blob that no row uses and that was last put before `now - graceMs`. `now` is on
 * the blob store's clock (file mtimes, S3's Last-Modified): the wall clock. Each blob is decided
 * and deleted in a short transaction of its own, under its lock. Safe to run twice, and beside
 * another run: a blob is deleted once, and deleting one already gone is harmless.
 */
export async function collectUnusedBlobs(
  services: Services,
  now: Date,
  { graceMs = BLOB_GRACE_MS }: { graceMs?: number } = {},
): Promise<CollectedBlobs> {
  const blobs = services.files.blobs;
  const putBefore = now.getTime() - graceMs;
  const counts: CollectedBlobs = { examined: 0, collected: 0 };
  let batch: Sha256[] = [];
  const sweep = async () => {
    // A first look, outside any lock, only spares most blobs their transaction.
    const used = await referencedBlobs(services.driver, batch);
    for (const sha256 of batch) {
      if (!used.has(sha256) && (await collectIfUnused(services, blobs, sha256, putBefore)))
        counts.collected++;
    }
    batch = [];
  };
  for await (const sha256 of blobs.list()) {
    counts.examined++;
    batch.push(sha256);
    if (batch.length === REFERENCE_BATCH) await sweep();
  }
  await sweep();
  return counts;
}

async function collectIfUnused(
  services: Services,
  blobs: BlobStore,
  sha256: Sha256,
  putBefore: number,
): Promise<boolean> {
  const freeRoom = await services.driver.transaction(async (tx) => {
    await lockBlob(tx, sha256);
    if (await isBlobReferenced(tx, sha256)) return null;
    // Looked at under the lock: a save may have put the same bytes again since the listing.
    const stat = await blobs.stat(sha256);
    if (!stat || stat.modifiedAt.getTime() >= putBefore) return null;
    return blobs.detach(sha256);
  });
  await freeRoom?.();
  return freeRoom !== null;
}

/**
 * Deletes at once, with no grace, those of `sha256s` that no row uses: the bytes of a refused
 * upload, of versions let go, of staged blocks dropped. Each under its lock, like the collector:
 * an upload of the same bytes names its blob under that lock before making it visible
 * (actors/files/upload-reservations.ts), so it is either seen here as a use or puts the bytes back
 * after. Not inside a transaction of the caller's (it takes one per blob).
 */
export async function discardUnusedBlobs(
  services: Services,
  sha256s: Iterable<Sha256>,
): Promise<void> {
  const blobs = services.files.blobs;
  for (const sha256 of new Set(sha256s)) {
    const freeRoom = await services.driver.transaction(async (tx) => {
      await lockBlob(tx, sha256);
      return (await isBlobReferenced(tx, sha256)) ? null : blobs.detach(sha256);
    });
    // Past the lock: the blob left its address under it, and the disk frees it now.
    await freeRoom?.();
  }
}

/**
 * Keeps the blob from the collector until `tx` ends, and makes sure it is still there: call it
 * in the transaction that commits a row using the blob, before that row is written. If the
 * collector took the blob between the put and now, nothing may be committed over it: the save
 * is refused with `storage_unavailable`, and sending it again stores the bytes again.
 */
export async function holdBlob(tx: Transaction, blobs: BlobStore, sha256: Sha256): Promise<void> {
  await lockBlob(tx, sha256);
  const stat = await blobs.stat(sha256).catch((error: unknown) => {
    if (error instanceof BlobStoreUnavailableError || error instanceof BlobStoreFullError) {
      throw new ServiceError(
        'storage_unavailable',
        "The service's file storage cannot be reached just now; nothing was saved. Retry later.",
      );
    }
    throw error;
  });
  if (!stat) {
    throw new ServiceError(
      'storage_unavailable',
      'The bytes of this save were cleared away while it waited its turn; nothing was saved. Send it again.',
    );
  }
}
