import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { Driver } from '../../storage/driver.ts';
import { openPglite } from '../../storage/pglite/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { runPrefix, TEST_DATABASE_URL, type DriverKind } from './storage.ts';

/**
 * A migration tested on the rows a version before it wrote: a database with only the migrations
 * before it applied, rows inserted as that version did, then the migration itself.
 */
export interface DatabaseBeforeMigration {
  driver: Driver;
  /** Applies the migration under test (the rest stay unapplied). */
  migrate(): Promise<void>;
  /** Closes the driver and removes the database. */
  drop(): Promise<void>;
}

const MIGRATIONS = new URL('../../storage/migrations/', import.meta.url);

const numberOf = (file: string) => Number(file.slice(0, 3));

const run = (driver: Driver, file: string) =>
  driver.transaction((tx) => tx.script(readFileSync(new URL(file, MIGRATIONS), 'utf8')));

/** A database of `kind` with the migrations before number `migration` applied. */
export async function databaseBeforeMigration(
  kind: DriverKind,
  migration: number,
): Promise<DatabaseBeforeMigration> {
  const files = readdirSync(MIGRATIONS)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort();
  const target = files.find((file) => numberOf(file) === migration);
  if (!target) throw new Error(`no migration numbered ${migration}`);
  const { driver, remove } = await emptyDatabase(kind, `before${migration}`);
  for (const file of files.filter((each) => numberOf(each) < migration)) await run(driver, file);
  return {
    driver,
    migrate: () => run(driver, target),
    drop: async () => {
      await driver.close();
      await remove();
    },
  };
}

/** An empty database of `kind`, not from the migrated template, and how to remove it. */
async function emptyDatabase(
  kind: DriverKind,
  label: string,
): Promise<{ driver: Driver; remove(): Promise<void> }> {
  if (kind === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), `agent-service-${label}-`));
    return {
      driver: await openPglite(dir),
      remove: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  // Named like the other test databases, so that a run killed half-way is cleaned later.
  const name = `${runPrefix()}${process.pid}_${label}`;
  const admin = postgres(TEST_DATABASE_URL as string, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(TEST_DATABASE_URL as string);
  url.pathname = `/${name}`;
  return {
    driver: await openPostgres(url.toString(), { max: 1 }),
    remove: async () => {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end({ timeout: 5 });
    },
  };
}
