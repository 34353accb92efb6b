import postgres from 'postgres';
import { migrate } from '../storage/migrate.ts';
import { openPostgres } from '../storage/postgres/driver.ts';
import { onTestsEnd } from '../test/helpers/resources.ts';

/** The PostgreSQL the bench may use: BENCH_DATABASE_URL first, else DATABASE_URL; or none. */
export function benchDatabaseUrl(): string | undefined {
  return process.env.BENCH_DATABASE_URL || process.env.DATABASE_URL || undefined;
}

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** Scratch databases are `bench_<pid>_<n>`: a later run can tell which are left over. */
const PREFIX = 'bench_';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

let made = 0;

/**
 * A new, migrated database of its own on the server of `serverUrl`, so the bench never writes
 * into a database someone else uses; `drop` removes it, and so does closeTestResources (a run
 * stopped by its time limit). Leftovers of killed runs (their process is gone) are dropped first.
 */
export async function scratchDatabase(serverUrl: string): Promise<ScratchDatabase> {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  try {
    const old = await admin<{ datname: string }[]>`
      select datname from pg_database where starts_with(datname, ${PREFIX})`;
    for (const { datname } of old) {
      const pid = Number(/^\d+/.exec(datname.slice(PREFIX.length))?.[0]);
      if (pid && !alive(pid))
        await admin.unsafe(`drop database if exists "${datname}" with (force)`);
    }
    const name = `${PREFIX}${process.pid}_${made++}`;
    await admin.unsafe(`create database "${name}"`);
    let dropping: Promise<void> | null = null;
    const drop = () =>
      (dropping ??= (async () => {
        const dropper = postgres(serverUrl, { max: 1, onnotice: () => undefined });
        try {
          await dropper.unsafe(`drop database if exists "${name}" with (force)`);
        } finally {
          await dropper.end({ timeout: 5 });
        }
      })());
    onTestsEnd(drop);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const driver = await openPostgres(url.toString(), { max: 1 });
    try {
      await migrate(driver);
    } finally {
      await driver.close();
    }
    return { url: url.toString(), drop };
  } finally {
    await admin.end({ timeout: 5 });
  }
}
