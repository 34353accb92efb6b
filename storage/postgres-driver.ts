import postgres from 'postgres';
import type { Driver, Queryable, Row } from './driver.ts';
import { DatabaseError } from './database-error.ts';

/** PostgreSQL through postgres.js, with prepared statements for the service's own SQL. */
export async function openPostgres(url: string, options: { max?: number } = {}): Promise<Driver> {
  const sql = postgres(url, {
    max: options.max ?? 10,
    prepare: true,
    onnotice: () => undefined,
    // int8 as a JS number, as the PGlite driver does.
    types: { bigint: { to: 20, from: [20], serialize: String, parse: Number } },
    connection: { application_name: 'agent-service' },
  });
  const wrap = (run: typeof sql | postgres.TransactionSql): Queryable => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      try {
        const rows = await run.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
          prepare: true,
        });
        return [...rows] as unknown as T[];
      } catch (error) {
        throw toDatabaseError(error);
      }
    },
    async script(text: string) {
      try {
        await run.unsafe(text).simple();
      } catch (error) {
        throw toDatabaseError(error);
      }
    },
  });
  const outside = wrap(sql);
  await outside.query('select 1');
  return {
    kind: 'postgres',
    query: outside.query,
    script: outside.script,
    async transaction(work) {
      try {
        return (await sql.begin((tx) => work(wrap(tx)))) as Awaited<ReturnType<typeof work>>;
      } catch (error) {
        throw toDatabaseError(error);
      }
    },
    async listen(channel, onPayload) {
      await sql.listen(channel, onPayload);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}

function toDatabaseError(error: unknown): Error {
  if (error instanceof DatabaseError) return error;
  const e = error as { message?: string; code?: string; name?: string };
  if (e && e.name === 'PostgresError') return new DatabaseError(String(e.message), e.code);
  return error as Error;
}
