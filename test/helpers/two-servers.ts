import type { Test } from 'uvu';
import type { Config } from '../../server/config.ts';
import { startTestServer, type TestServer } from './server.ts';
import { freshDatabaseUrl, postgresSuite } from './storage.ts';

/** Two servers on one database: two processes, as far as the service can tell. */
export interface TwoServers {
  a: TestServer;
  b: TestServer;
  /** The database they share. */
  databaseUrl: string;
}

/**
 * A PostgreSQL suite over two servers sharing a fresh database and nothing else, started
 * before its first test (each with `config`) and closed after its last.
 */
export function twoServerSuite(name: string, config: Partial<Config> = {}): Test<TwoServers> {
  const test = postgresSuite<TwoServers>(name);
  test.before(async (context) => {
    const databaseUrl = await freshDatabaseUrl();
    context.databaseUrl = databaseUrl;
    context.a = await startTestServer({ ...config, databaseUrl });
    context.b = await startTestServer({ ...config, databaseUrl });
  });
  test.after(async ({ a, b }) => {
    await a.close();
    await b.close();
  });
  return test;
}
