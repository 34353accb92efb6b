import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HANDLERS } from '../../actors/handlers.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';

/**
 * Issue 32 §5: no write answers a false "nothing was written". Whether it does is decided where
 * the write meets the database: the driver. test/storage/postgres-lost-connection-answers.test.ts
 * holds every method of the PostgreSQL driver and of its transactions (read from the live
 * objects) to the truth when a connection is lost after a write was sent. That covers every
 * write of the service only if nothing else reaches the database; this suite makes sure of it,
 * from the source of the service (every door, capability and driver: what runs in the process):
 * - only the drivers (storage/postgres/, storage/pglite/) load a database client (postgres.js,
 *   PGlite, pg), in any form of import, require or resolve;
 * - only storage/open.ts opens a driver, and the service starts from it;
 * - nothing outside the drivers makes a Queryable (an object with `query` and `script`) but the
 *   unit of work's reader, which hands its calls to a transaction the driver made;
 * - every operation of the operation table that writes (not readOnly) has its handler in
 *   HANDLERS, code in the scanned folders, which reaches the database only through the Driver
 *   it is given (services.driver, services.db()): there is no other way to reach it.
 * A new client, a second way of opening one, or a hand-made Queryable fails here until it is
 * routed through the driver (or listed, with the reason it keeps the class closed).
 */

const root = join(import.meta.dirname, '../..');
/** What runs in the service process (tests, benches and deploy scripts excluded). */
const SOURCE_FOLDERS = ['actors', 'server', 'storage', 'protocol', 'machines'];
const DRIVER_FOLDERS = ['storage/postgres/', 'storage/pglite/'];

/** A module name of a database client, as imported, required, resolved or loaded. */
const CLIENT =
  /(?:from\s*|import\s*\(\s*|require\s*\(\s*|\.resolve\s*\(\s*|^\s*import\s+)['"](?:postgres|pg|pg-[\w-]+|@electric-sql\/[\w/.-]+|pglite[\w/.-]*)['"]/m;
/** A module of a driver's own (what opens connections). */
const DRIVER_MODULE =
  /['"][^'"]*storage\/(?:postgres|pglite)\/driver\.ts['"]|['"]\.\/(?:postgres|pglite)\/driver\.ts['"]/;

/** Where a Queryable may be made outside the drivers, and why it reaches only the driver. */
const QUERYABLES_ALLOWED: Record<string, string> = {
  'actors/kernel/commit.ts':
    "UnitOfWork.reader(): each call goes to the unit's transaction, opened by driver.transaction",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(?:ts|js|mjs|cjs)$/.test(name) ? [path] : [];
  });
}

const files = SOURCE_FOLDERS.flatMap((folder) => sourceFiles(join(root, folder))).map((path) => ({
  path: relative(root, path),
  text: readFileSync(path, 'utf8'),
}));
const inDriver = (path: string) => DRIVER_FOLDERS.some((folder) => path.startsWith(folder));

const test = suite('the database is reached only through the driver');

test('the scan reads the service: both drivers, the doors and the capabilities', () => {
  const paths = files.map((file) => file.path);
  for (const expected of [
    'storage/postgres/driver.ts',
    'storage/pglite/driver.ts',
    'storage/open.ts',
    'server/app.ts',
    'actors/handlers.ts',
  ]) {
    assert.ok(paths.includes(expected), expected);
  }
  assert.ok(
    files.some((file) => file.path.startsWith('storage/postgres/') && CLIENT.test(file.text)),
    'the pattern finds the PostgreSQL driver loading postgres.js',
  );
  assert.ok(
    files.some((file) => file.path.startsWith('storage/pglite/') && CLIENT.test(file.text)),
    'the pattern finds the PGlite driver resolving PGlite',
  );
});

test('no module outside the drivers loads a database client', () => {
  const loading = files.filter((file) => !inDriver(file.path) && CLIENT.test(file.text));
  assert.equal(
    loading.map((file) => file.path),
    [],
  );
});

test('only storage/open.ts opens a driver, and the service opens its storage there', () => {
  const opening = files.filter(
    (file) =>
      !inDriver(file.path) && DRIVER_MODULE.test(file.text.replace(/^\s*import type .*$/gm, '')),
  );
  assert.equal(
    opening.map((file) => file.path),
    ['storage/open.ts'],
  );
  const app = files.find((file) => file.path === 'server/app.ts');
  assert.match(app?.text ?? '', /from '\.\.\/storage\/open\.ts'/);
});

test('no Queryable is made outside the drivers but the unit of work reader, which hands its calls to a driver transaction', () => {
  const makers = files.filter((file) => {
    if (inDriver(file.path) || file.path === 'storage/driver.ts') return false;
    const hasQuery = /(?:^|[\s{,])(?:async\s+)?query(?:<[^>]*>)?\s*(?:\(|:\s*(?:async\s*)?\()/m;
    const hasScript = /(?:^|[\s{,])(?:async\s+)?script\s*(?:\(|:\s*(?:async\s*)?\()/m;
    const declared = /\b(?:implements|satisfies)\s+(?:Queryable|Transaction|Driver)\b/;
    return (hasQuery.test(file.text) && hasScript.test(file.text)) || declared.test(file.text);
  });
  assert.equal(
    makers.map((file) => file.path),
    Object.keys(QUERYABLES_ALLOWED),
  );
  const reader = files.find((file) => file.path === 'actors/kernel/commit.ts')?.text ?? '';
  assert.match(
    reader,
    /this\.driver\.transaction\(/,
    'the unit opens its transaction on the driver',
  );
});

test('every operation that writes has its handler in the handler table, inside the scanned code', () => {
  const writes = OPERATION_LIST.filter((operation) => operation.readOnly !== true);
  assert.ok(writes.length > 0);
  const missing = writes
    .map((operation) => operation.name)
    .filter((name) => typeof (HANDLERS as Record<string, unknown>)[name] !== 'function');
  assert.equal(missing, []);
});

test.run();
