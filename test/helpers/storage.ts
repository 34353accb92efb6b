import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Driver } from '../../storage/driver.ts';
import { migrate } from '../../storage/migrate.ts';
import { openPglite } from '../../storage/pglite-driver.ts';
import { openPostgres } from '../../storage/postgres-driver.ts';
import { onTestsEnd } from './resources.ts';

/** The PostgreSQL the suite also runs on, when CI provides one. */
export const TEST_DATABASE_URL = process.env.DATABASE_URL || undefined;

let template: Promise<string> | null = null;

/**
 * A fresh, migrated PGlite data directory. initdb costs seconds, so one migrated template is
 * made per run and copied for each test (STACK.md).
 */
export async function freshPgliteDir(): Promise<string> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-service-template-'));
    const driver = await openPglite(dir);
    await migrate(driver);
    await driver.close();
    onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
    return dir;
  })();
  const source = await template;
  const dir = mkdtempSync(join(tmpdir(), 'agent-service-test-'));
  cpSync(source, dir, { recursive: true });
  onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export type DriverKind = 'pglite' | 'postgres';

/** The drivers this run can test: PGlite always, PostgreSQL when DATABASE_URL is set. */
export function driverKinds(): DriverKind[] {
  return TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

/** A migrated driver of the kind asked for. */
export async function openTestDriver(kind: DriverKind): Promise<Driver> {
  if (kind === 'postgres') {
    const driver = await openPostgres(TEST_DATABASE_URL as string);
    await migrate(driver);
    return driver;
  }
  const driver = await openPglite(await freshPgliteDir());
  await migrate(driver);
  return driver;
}
