import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { STORAGE_LINK_PREFIX } from '../../protocol/files/storage-links.ts';
import { enginesHere } from '../helpers/engines.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { send } from '../helpers/transport.ts';

/**
 * Every path /openapi.json describes answers `OPTIONS` with an `Allow` naming exactly the methods
 * it describes there (and OPTIONS), and a method it does not describe (TRACE, PATCH) with `405`
 * and that same `Allow`, on both engines (issue 35 §1: `OPTIONS /payments/offchain` named GET,
 * which `/payments/{payment_id}` serves, not that path). The paths are the description's own, so
 * a route added later is held to this too. Two doors speak their own protocol and are left to
 * their suites: /mcp (JSON-RPC, test/e2e/mcp-transport.test.ts) and the storage links (Azure's,
 * test/e2e/storage-link-refusals.test.ts).
 */
interface Context {
  server: TestServer;
  document: { paths: Record<string, Record<string, unknown>> };
}

const HTTP_METHODS = ['get', 'head', 'post', 'put', 'delete', 'patch'];

/** A value each kind of path parameter takes, so that the path reaches its routes. */
const SAMPLE_PARAMETERS: Record<string, string> = {
  name: 'agent-services',
  path: 'notes/a.txt',
};
const SAMPLE_ID = '00000000-0000-4000-8000-000000000000';

function concrete(path: string): string {
  return path.replace(/\{([a-z_]+)\}/g, (_, name: string) => SAMPLE_PARAMETERS[name] ?? SAMPLE_ID);
}

/** The paths the description lists with their methods (OPTIONS with them), doors left out. */
function describedPaths(document: Context['document']): [string, string[]][] {
  return Object.entries(document.paths)
    .filter(([path]) => path !== '/mcp' && !path.startsWith(`${STORAGE_LINK_PREFIX}/`))
    .map(([path, item]) => [
      path,
      [
        ...Object.keys(item)
          .filter((key) => HTTP_METHODS.includes(key))
          .map((method) => method.toUpperCase()),
        'OPTIONS',
      ].sort(),
    ]);
}

const allowOf = (header: string | string[] | undefined): string[] =>
  String(header ?? '')
    .split(',')
    .map((method) => method.trim())
    .filter((method) => method !== '')
    .sort();

for (const engine of enginesHere(import.meta.filename)) {
  const test = suite<Context>(`Allow names what is served at a path (${engine})`);

  test.before(async (context) => {
    context.server = await startTestServer({ httpEngine: engine });
    context.document = (await (
      await context.server.get('/openapi.json')
    ).json()) as Context['document'];
  });
  test.after(async ({ server }) => {
    await server.close();
  });

  test('OPTIONS on every described path names exactly its described methods', async ({
    server,
    document,
  }) => {
    const wrong: string[] = [];
    for (const [path, methods] of describedPaths(document)) {
      const answer = await send(server, 'OPTIONS', concrete(path));
      const allow = allowOf(answer.headers.allow).filter((method) => method !== 'OPTIONS');
      const described = methods.filter((method) => method !== 'OPTIONS');
      if (answer.status !== 204 || allow.join() !== described.join()) {
        wrong.push(
          `${path}: ${answer.status} Allow ${allow.join()} (described ${described.join()})`,
        );
      }
    }
    assert.equal(wrong, []);
  });

  test('a method no described path takes answers 405 with the Allow of the path', async ({
    server,
    document,
  }) => {
    const wrong: string[] = [];
    for (const [path, methods] of describedPaths(document)) {
      for (const method of ['TRACE', 'PATCH']) {
        const answer = await send(server, method, concrete(path));
        const allow = allowOf(answer.headers.allow).filter((name) => name !== 'OPTIONS');
        const described = methods.filter((name) => name !== 'OPTIONS');
        if (answer.status !== 405 || allow.join() !== described.join()) {
          wrong.push(`${method} ${path}: ${answer.status} Allow ${allow.join()}`);
        }
      }
    }
    assert.equal(wrong, []);
  });

  test('a path a route names literally is not read as the parameter of another method', async ({
    server,
  }) => {
    const answer = await send(server, 'GET', '/payments/offchain');
    assert.is(answer.status, 405);
    assert.equal(allowOf(answer.headers.allow), ['POST']);
    const relate = await send(server, 'GET', '/conventions/relate');
    assert.is(relate.status, 405);
    assert.equal(allowOf(relate.headers.allow), ['POST']);
  });

  test.run();
}
