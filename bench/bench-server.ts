import type { Config } from '../server/config.ts';
import { startTestServer, type TestServer } from '../test/helpers/server.ts';

/**
 * The service a bench measures: a test server (port 0, a fresh database, nothing mocked), but
 * checked as `npm start` runs it. The tests' `strictProtocol` (each recorded change's data
 * parsed against its schema in protocol/events.ts, each error's code against its operation's
 * list) guards the tests and is off in production: a bench that kept it would time a check
 * no deployment makes (2 ms of a listing told to 1,000 watchers).
 */
export function startBenchServer(overrides: Partial<Config> = {}): Promise<TestServer> {
  return startTestServer({ strictProtocol: false, ...overrides });
}
