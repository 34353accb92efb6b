import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CAPABILITIES } from '../../actors/capabilities.ts';

/**
 * One name per capability in every layer: what a capability owns in protocol/ and storage/ is
 * `<name>.ts` or a folder `<name>/`, named as in the capability list (actors/<name>/). Every
 * other module at the top of those layers is shared by all (the kernel's, the drivers', the
 * wire's own rules), and says so below with the reason; a new module named after no capability
 * and not written down here fails, so a capability's code cannot hide under another name.
 */
const root = join(import.meta.dirname, '../..');
const NAMES = CAPABILITIES.map((capability) => capability.name);

const SHARED: Record<string, Record<string, string>> = {
  protocol: {
    'binding.ts': 'how an operation binds to HTTP, MCP and mail: every door reads it',
    'conditional-dates.ts': 'HTTP dates of conditional requests, for every door that answers bytes',
    'documents/': 'the documents served to agents, one per layer protocol, and the changelog',
    'documents.ts': 'loads and fills the documents',
    'errors.ts': 'the error codes of every operation and their problem+json shape',
    'events.ts': 'the change events of every capability, spread from their tables',
    'input-guard.ts': "the bounds of agents' input (sizes, depth) every parser takes",
    'jcs.ts': 'JSON canonicalization (RFC 8785), a general algorithm',
    'message-signature.ts':
      'HTTP Message Signatures (RFC 9421): what every door that takes a signed request reads',
    'json-schema.ts': 'JSON Schema from the zod declarations, for MCP and OpenAPI',
    'openapi-doors.ts': 'the OpenAPI of the doors that are no operation (/mcp, storage links)',
    'openapi.ts': '/openapi.json, generated from the operation table',
    'operation.ts': 'what an operation declares',
    'operations.ts': "the operation table, spread from the capabilities' tables",
    'paging.ts': 'cursors and page sizes, one rule for every list',
    'version.ts': 'the service version',
    'yaml-expansion.ts': 'the bound on what YAML expands to, for every YAML parser',
  },
  storage: {
    'blobs/': 'the blob stores (file system, S3) under the files',
    'database-error.ts': 'database errors by code, for every capability',
    'driver.ts': 'the one small interface both drivers serve',
    'kernel/': "the kernel's tables (changes, actors, idempotency, jobs, limits)",
    'locks.ts': 'advisory lock keys, one space for all',
    'migrate.ts': 'runs the migrations',
    'migrations/': 'the SQL migrations, in order',
    'open.ts': 'opens the driver the configuration names',
    'pglite/': 'the PGlite driver',
    'postgres/': 'the PostgreSQL driver',
    'transaction-guard.ts': 'refuses a second transaction inside one',
  },
};

function entries(layer: string): string[] {
  return readdirSync(join(root, layer)).map((name) =>
    statSync(join(root, layer, name)).isDirectory() ? `${name}/` : name,
  );
}

const test = suite('one name per capability in every layer');

for (const layer of Object.keys(SHARED)) {
  test(`every module at the top of ${layer}/ is a capability's, by its name, or shared for a reason written down`, () => {
    const unnamed = entries(layer).filter(
      (entry) => !NAMES.includes(entry.replace(/(\.ts|\/)$/, '')) && !(entry in SHARED[layer]!),
    );
    assert.equal(unnamed, [], `named after no capability in ${layer}/`);
    const gone = Object.keys(SHARED[layer]!).filter((entry) => !entries(layer).includes(entry));
    assert.equal(gone, [], `written down as shared but not in ${layer}/ any more`);
  });
}

test('every capability has its folder in actors/ and its protocol under its name', () => {
  for (const name of NAMES) {
    assert.ok(entries('actors').includes(`${name}/`), `actors/${name}/`);
    assert.ok(
      entries('protocol').some((entry) => entry === `${name}.ts` || entry === `${name}/`),
      `protocol/${name}.ts or protocol/${name}/`,
    );
  }
});

test.run();
