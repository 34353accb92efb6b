import { randomUUID } from 'node:crypto';
import type { BlobStore } from '../../storage/blobs/blob-store.ts';
import {
  recordBlobStoreIdentity,
  recordedBlobStoreIdentity,
} from '../../storage/files/blob-store-identity.ts';
import type { Queryable } from '../../storage/driver.ts';

/**
 * Makes sure this process's blob store is the one the database was first used with. At the
 * first start an identity blob (random text) is put into the store and its sha256 recorded in
 * the database; every later start, in any process, checks that its store holds that blob. A
 * process pointed at another store (a second machine's own DATA_DIR beside a shared PostgreSQL,
 * another bucket) would save files the others cannot read and answer 404 for theirs: it refuses
 * to start instead, saying why. The collector of unused blobs spares the identity blob
 * (storage/files/blob-references.ts).
 */
export async function checkBlobStoreIdentity(
  db: Queryable,
  blobs: BlobStore,
  where: string,
): Promise<void> {
  let recorded = await recordedBlobStoreIdentity(db);
  if (recorded === null) {
    const text = `agent-service blob store identity ${randomUUID()}\n`;
    const stored = await blobs.put(
      (async function* () {
        yield Buffer.from(text);
      })(),
      { maxBytes: 1024 },
    );
    // Another process starting at the same moment may have recorded its own first: its blob is
    // then the identity, and it must be in this store too.
    recorded = await recordBlobStoreIdentity(db, stored.sha256);
  }
  if ((await blobs.stat(recorded)) === null) {
    throw new Error(
      `The blob store (${where}) is not the one this database was first used with: it lacks the ` +
        `identity blob ${recorded} written there at the first start. Every process on one database ` +
        'must share one blob store (the same S3_URL bucket, or one DATA_DIR/blobs on shared ' +
        'storage); otherwise files saved through one process answer 404 through another. Point ' +
        'this process at the store the others use.',
    );
  }
}
