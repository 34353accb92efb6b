import { readdirSync, readFileSync } from 'node:fs';
import type { Driver } from './driver.ts';
import { ADVISORY_LOCK } from './locks.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

/**
 * Applies the numbered migrations not yet applied, each in its own transaction, in order.
 * Several processes starting at once on one PostgreSQL take turns on an advisory lock.
 */
export async function migrate(driver: Driver): Promise<number[]> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort();
  const applied: number[] = [];
  await driver.script(
    'create table if not exists schema_migrations (version integer primary key, applied_at timestamptz not null default now())',
  );
  for (const file of files) {
    const version = Number(file.slice(0, 3));
    const done = await driver.transaction(async (tx) => {
      await tx.query(`select pg_advisory_xact_lock(${ADVISORY_LOCK.migrations})`);
      const rows = await tx.query('select 1 from schema_migrations where version = $1', [version]);
      if (rows.length > 0) return true;
      await tx.script(readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8'));
      await tx.query('insert into schema_migrations (version) values ($1)', [version]);
      return false;
    });
    if (!done) applied.push(version);
  }
  return applied;
}
