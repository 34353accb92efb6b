import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * README.md is the first page a person reads: the version it states must be the one the
 * package and the running service state, so a release cannot leave it behind.
 */
const test = suite<{ server: TestServer }>('the README states the version that runs');

const root = new URL('../../', import.meta.url);

/** Every version README.md states as `Version X.Y.Z` at the start of a line. */
function readmeVersions(): string[] {
  const readme = readFileSync(new URL('README.md', root), 'utf8');
  return [...readme.matchAll(/^Version (\d+\.\d+\.\d+)\b/gm)].map((match) => match[1] as string);
}

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

test("the README states one version, package.json's", () => {
  const { version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
    version: string;
  };
  assert.equal(readmeVersions(), [version]);
});

test("the README's version is the one GET /health answers", async ({ server }) => {
  const health = (await (await server.get('/health')).json()) as { service_version: string };
  assert.equal(readmeVersions(), [health.service_version]);
});

test.run();
