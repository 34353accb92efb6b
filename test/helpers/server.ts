import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, type RunningService } from '../../server/app.ts';
import { configFromEnv, type Config } from '../../server/config.ts';
import { onTestsEnd } from './resources.ts';
import { openTestDriver, TEST_DATABASE_URL } from './storage.ts';

export interface TestServer extends RunningService {
  url(path: string): string;
  /** Signs up a new agent over HTTP and returns its id, name and token. */
  signUp(name?: string): Promise<{ agent_id: string; name: string; api_token: string }>;
  /** fetch with the token as Bearer. */
  get(path: string, token?: string): Promise<Response>;
  post(path: string, body: unknown, token?: string): Promise<Response>;
}

let names = 0;

/**
 * The settings of a test's service on `dataDir`: as the environment says, with what tests need
 * on top (any port, no drain, no rate limits, a strict protocol); `overrides` last.
 */
export function testConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  return {
    ...configFromEnv({ HTTP_ENGINE: process.env.HTTP_ENGINE }),
    dataDir,
    port: 0,
    log: () => undefined,
    // Closing a test server ends what is still open at once; the drain has a test of its own.
    shutdownTimeoutMs: 0,
    // Every test signs up from 127.0.0.1; the limits have a test of their own.
    rateLimitPerMinute: 0,
    signUpLimitPerHour: 0,
    // A code an operation does not declare, or event data its schema refuses, fails the test.
    strictProtocol: true,
    // Each test server's SMTP door on a free port of its own.
    smtpPort: 0,
    // Sender checks of test mail ask DNS: tests that need answers run a stub
    // (test/helpers/dns-stub.ts); the others must not wait long for a resolver that is away.
    mailDnsTimeoutMs: 500,
    ...overrides,
  };
}

/**
 * A real server on port 0, on PGlite (a fresh copy) or on a fresh database of its own on the
 * PostgreSQL of DATABASE_URL, on the engine HTTP_ENGINE names. Nothing of ours is mocked.
 * Servers that must share one database (two processes) pass the same `databaseUrl`, from
 * freshDatabaseUrl() in ./storage.ts.
 */
/** The data directory (file blobs) of the servers started on each shared database. */
const dataDirsByDatabase = new Map<string, string>();

export async function startTestServer(overrides: Partial<Config> = {}): Promise<TestServer> {
  // A data directory of its own (file blobs), removed at the end of the run; servers on one
  // database share one, as a deployment's processes share one blob store (the service refuses
  // to start on another store than its database's: actors/files/blob-store-identity.ts).
  const databaseUrl = overrides.databaseUrl;
  let dataDir = databaseUrl ? dataDirsByDatabase.get(databaseUrl) : undefined;
  if (!dataDir) {
    const made = mkdtempSync(join(tmpdir(), 'agent-service-data-'));
    onTestsEnd(async () => rmSync(made, { recursive: true, force: true }));
    if (databaseUrl) dataDirsByDatabase.set(databaseUrl, made);
    dataDir = made;
  }
  const config = testConfig(dataDir, overrides);
  const driver = await openTestDriver(TEST_DATABASE_URL ? 'postgres' : 'pglite', {
    databaseUrl: overrides.databaseUrl,
  });
  const service = await startService(config, driver);
  const url = (path: string) => `${service.baseUrl}${path}`;
  const headers = (token?: string): Record<string, string> =>
    token ? { authorization: `Bearer ${token}` } : {};
  return {
    ...service,
    url,
    get: (path, token) => fetch(url(path), { headers: headers(token) }),
    post: (path, body, token) =>
      fetch(url(path), {
        method: 'POST',
        headers: { ...headers(token), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    async signUp(name = `agent ${process.pid}-${++names}`) {
      const response = await fetch(url('/agents'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      });
      if (response.status !== 201)
        throw new Error(`sign-up failed: ${response.status} ${await response.text()}`);
      return (await response.json()) as { agent_id: string; name: string; api_token: string };
    },
  };
}
