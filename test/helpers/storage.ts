import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { suite, type Test } from 'uvu';
import type { Driver } from '../../storage/driver.ts';
import { migrate } from '../../storage/migrate.ts';
import { openPglite } from '../../storage/pglite/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { alive } from './process-alive.ts';
import { onTestsEnd } from './resources.ts';

/** The PostgreSQL the suite also runs on, when CI provides one. */
export const TEST_DATABASE_URL = process.env.DATABASE_URL || undefined;

let template: Promise<string> | null = null;

/**
 * Where the PGlite copies go: in memory (tmpfs) where there is one. A copy is ~1,300 files and
 * 43 MB; on this machine's busy disk copying one took ~900 ms and removing it ~150 ms, on
 * /dev/shm ~55 ms and ~20 ms, and every suite makes at least one. Copies are removed as their
 * driver closes (openTestDriver), so that a run's copies do not pile up in memory.
 */
export const PGLITE_COPIES_ROOT = roomyTmpfs('/dev/shm') ?? tmpdir();

/**
 * `path` when it is there with room for the workers' templates and copies (a container's
 * /dev/shm is 64 MB by default: too small), else undefined.
 */
function roomyTmpfs(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const { bavail, bsize } = statfsSync(path);
  return bavail * bsize >= 2 ** 30 ? path : undefined;
}

/** Copies are named after this process, so that a later run can remove those a killed one left. */
export const COPY_PREFIX = 'agent-service-pglite-';

export function removeCopiesOfEndedRuns(): void {
  for (const name of readdirSync(PGLITE_COPIES_ROOT)) {
    const pid = Number(/^(\d+)-/.exec(name.slice(COPY_PREFIX.length))?.[1]);
    if (name.startsWith(COPY_PREFIX) && pid && !alive(pid))
      rmSync(join(PGLITE_COPIES_ROOT, name), { recursive: true, force: true });
  }
}

const newCopyDir = () => mkdtempSync(join(PGLITE_COPIES_ROOT, `${COPY_PREFIX}${process.pid}-`));

/**
 * A fresh, migrated PGlite data directory. Making one costs seconds, so one migrated template
 * is made per run and copied for each test, as the service copies its image (README.md).
 * Removed at the end of the run (openTestDriver's copies as soon as their driver closes).
 */
export async function freshPgliteDir(): Promise<string> {
  template ??= (async () => {
    removeCopiesOfEndedRuns();
    const dir = newCopyDir();
    onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
    const driver = await openPglite(dir);
    await migrate(driver);
    await driver.close();
    return dir;
  })();
  const source = await template;
  const dir = newCopyDir();
  cpSync(source, dir, { recursive: true });
  onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// PostgreSQL: every suite gets a database of its own, copied from one migrated template per
// run (CREATE DATABASE ... TEMPLATE), named after the server's database and this process, and
// dropped at the end of the run.
let server: { sql: postgres.Sql; template: Promise<string>; made: string[] } | null = null;

function databaseUrl(name: string): string {
  const url = new URL(TEST_DATABASE_URL as string);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Databases of this run are `<base>_t<pid>_<n>`: a later run can tell which are left over (so
 * name every test database with it, and its pid next).
 */
export function runPrefix(): string {
  const base = decodeURIComponent(new URL(TEST_DATABASE_URL as string).pathname.slice(1));
  return `${
    base
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, '_')
      .slice(0, 30) || 'test'
  }_t`;
}

function testServer(): NonNullable<typeof server> {
  if (!TEST_DATABASE_URL) throw new Error('PostgreSQL tests need DATABASE_URL');
  if (server) return server;
  const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => undefined });
  const made: string[] = [];
  const prefix = runPrefix();
  const template = (async () => {
    // Left by runs that did not get to clean up (killed): their process is gone.
    const old = await sql<{ datname: string }[]>`
      select datname from pg_database where starts_with(datname, ${prefix})`;
    for (const { datname } of old) {
      const pid = Number(/^\d+/.exec(datname.slice(prefix.length))?.[0]);
      if (pid && !alive(pid)) await sql.unsafe(`drop database if exists "${datname}" with (force)`);
    }
    const name = `${prefix}${process.pid}_template`;
    await sql.unsafe(`create database "${name}"`);
    made.push(name);
    const driver = await openPostgres(databaseUrl(name), { max: 1 });
    try {
      await migrate(driver);
    } finally {
      // A template must have no connections when it is copied.
      await driver.close();
    }
    return name;
  })();
  template.catch(() => undefined);
  server = { sql, template, made };
  onTestsEnd(async () => {
    for (const name of made.reverse()) {
      await sql.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    }
    await sql.end({ timeout: 5 });
  });
  return server;
}

/**
 * A new, migrated database of its own on the test PostgreSQL server (DATABASE_URL), dropped at
 * the end of the run. Pass it to several test servers that must share one database.
 */
export async function freshDatabaseUrl(): Promise<string> {
  const { sql, template, made } = testServer();
  const name = `${runPrefix()}${process.pid}_${made.length}`;
  made.push(name);
  await sql.unsafe(`create database "${name}" template "${await template}"`);
  return databaseUrl(name);
}

export type DriverKind = 'pglite' | 'postgres';

/** The drivers this run can test: PGlite always, PostgreSQL when DATABASE_URL is set. */
export function driverKinds(): DriverKind[] {
  return TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

/**
 * A migrated driver of the kind asked for, on a database of its own; or, with `databaseUrl`,
 * on that PostgreSQL database (e.g. one from freshDatabaseUrl shared by two servers).
 */
export async function openTestDriver(
  kind: DriverKind,
  options: { databaseUrl?: string | undefined } = {},
): Promise<Driver> {
  if (options.databaseUrl) return openPostgres(options.databaseUrl);
  if (kind === 'postgres') return openPostgres(await freshDatabaseUrl());
  const dir = await freshPgliteDir();
  const driver = await openPglite(dir);
  // Nobody else knows this copy: once its driver is closed, nothing opens it again.
  const close = driver.close.bind(driver);
  driver.close = async () => {
    try {
      await close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  return driver;
}

const skippedPostgresSuites: string[] = [];

/** Suites declared with postgresSuite that did not run for want of DATABASE_URL. */
export function postgresSuitesSkipped(): readonly string[] {
  return skippedPostgresSuites;
}

/**
 * A uvu suite that needs PostgreSQL. Without DATABASE_URL its `run()` does nothing, and the
 * runner says how many were skipped (and fails the run when REQUIRE_POSTGRES=1).
 */
export function postgresSuite<T = Record<string, unknown>>(name: string): Test<T> {
  const test = suite<T>(name);
  if (!TEST_DATABASE_URL) {
    skippedPostgresSuites.push(name);
    test.run = () => undefined;
  }
  return test;
}
