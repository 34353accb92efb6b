import { join } from 'node:path';
import type { Driver } from './driver.ts';

/** The driver's type, for start-up code that may import only this file of storage/. */
export type { Driver };

import { migrate } from './migrate.ts';
import { openPglite } from './pglite/driver.ts';
import { openPostgres } from './postgres/driver.ts';

/** PostgreSQL when a URL is given, else the embedded PGlite under `dataDir`; migrated. */
export async function openStorage(options: {
  databaseUrl?: string | undefined;
  dataDir: string;
}): Promise<Driver> {
  const driver = options.databaseUrl
    ? await openPostgres(options.databaseUrl)
    : await openPglite(join(options.dataDir, 'pglite'));
  try {
    await migrate(driver);
  } catch (error) {
    await driver.close();
    throw error;
  }
  return driver;
}
