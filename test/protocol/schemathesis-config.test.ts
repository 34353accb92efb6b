import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateOpenApi } from '../../protocol/openapi.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';

/**
 * schemathesis.toml (issue 35 §1) holds the few refusals no schema can say, by operation id:
 * each id it names is one /openapi.json has, and the list-position entry names exactly the
 * operations that take a `cursor` or an `after`, so that a new list is neither missed nor a
 * removed one kept.
 */
const test = suite("schemathesis.toml's exceptions");

const CONFIG = readFileSync(new URL('../../schemathesis.toml', import.meta.url), 'utf8');

/** Each `include-operation-id-regex` of the file, compiled. */
const ENTRIES = [...CONFIG.matchAll(/^include-operation-id-regex = "(.+)"$/gm)].map(
  (match) => new RegExp(match[1] as string),
);

const DOCUMENT = generateOpenApi('http://service.test') as {
  paths: Record<string, Record<string, { operationId?: string }>>;
};
const IDS = Object.values(DOCUMENT.paths).flatMap((item) =>
  Object.values(item).flatMap((entry) => (entry.operationId ? [entry.operationId] : [])),
);

test('every exception names operations /openapi.json describes', () => {
  assert.ok(ENTRIES.length >= 1);
  for (const entry of ENTRIES) {
    assert.ok(
      IDS.some((id) => entry.test(id)),
      `${entry.source} names no operation of /openapi.json`,
    );
  }
});

test('the list-position exception names exactly the operations taking a cursor or an after', () => {
  const positions = ENTRIES.find((entry) => entry.test('list_files')) as RegExp;
  assert.ok(positions, 'an entry for the lists');
  const taking = OPERATION_LIST.filter(
    (operation) =>
      !operation.operatorOnly &&
      ('cursor' in operation.input.shape || 'after' in operation.input.shape),
  ).flatMap((operation) =>
    operation.method === 'GET' ? [operation.name, `${operation.name}_head`] : [operation.name],
  );
  assert.equal(IDS.filter((id) => positions.test(id)).sort(), taking.sort());
});

test.run();
