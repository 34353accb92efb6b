import type { Queryable } from '../driver.ts';

/** The identity blob's sha256 this database recorded at its first start, if any. */
export async function recordedBlobStoreIdentity(db: Queryable): Promise<string | null> {
  const [row] = await db.query<{ sha256: string }>('select sha256 from blob_store_identity');
  return row?.sha256 ?? null;
}

/**
 * Records `sha256` as the identity unless one is recorded already (another process starting at
 * the same moment); answers the one recorded, whichever it is.
 */
export async function recordBlobStoreIdentity(db: Queryable, sha256: string): Promise<string> {
  await db.query(
    'insert into blob_store_identity (sha256) values ($1) on conflict (only_row) do nothing',
    [sha256],
  );
  return (await recordedBlobStoreIdentity(db)) ?? sha256;
}
