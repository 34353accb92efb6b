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
  paths: Record<string, Record<string, { operationId?: string; responses?: object }>>;
};
/** Each operation of /openapi.json: its id, its path and the statuses it documents. */
const DESCRIBED = Object.entries(DOCUMENT.paths).flatMap(([path, item]) =>
  Object.values(item).flatMap((entry) =>
    entry.operationId
      ? [{ id: entry.operationId, path, statuses: Object.keys(entry.responses ?? {}) }]
      : [],
  ),
);
const IDS = DESCRIBED.map((operation) => operation.id);

/** Schemathesis's own list for positive_data_acceptance, and what the file's global list adds. */
const DEFAULT_STATUSES = ['2xx', '401', '403', '404', '409', '5xx'];
const GLOBAL_STATUSES = (
  /^\[checks\.positive_data_acceptance\]\nexpected-statuses = \[(.+)\]$/m.exec(CONFIG)?.[1] ?? ''
)
  .split(', ')
  .map((status) => JSON.parse(status) as string);

/** Each `[[operations]]` entry that widens what positive data may be answered, and whom it names. */
const WIDENINGS = CONFIG.split('[[operations]]')
  .slice(1)
  .flatMap((block) => {
    const statuses = /^checks\.positive_data_acceptance\.expected-statuses = \[(.+)\]$/m.exec(
      block,
    )?.[1];
    if (!statuses) return [];
    const byId = /^include-operation-id-regex = "(.+)"$/m.exec(block)?.[1];
    const byPath = /^include-path = "(.+)"$/m.exec(block)?.[1];
    const names = (operation: { id: string; path: string }) =>
      byId ? new RegExp(byId).test(operation.id) : operation.path === byPath;
    return [
      {
        label: byId ?? byPath ?? '?',
        names,
        statuses: statuses.split(', ').map((status) => JSON.parse(status) as string),
      },
    ];
  });

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

test('an entry lets an operation answer positive data only with statuses it documents', () => {
  assert.ok(WIDENINGS.length >= 4);
  for (const widening of WIDENINGS) {
    const added = widening.statuses.filter(
      (status) => !DEFAULT_STATUSES.includes(status) && !GLOBAL_STATUSES.includes(status),
    );
    const named = DESCRIBED.filter(widening.names);
    assert.ok(named.length > 0, `${widening.label} names no operation`);
    for (const operation of named) {
      for (const status of added) {
        assert.ok(
          operation.statuses.includes(status),
          `${widening.label} lets ${operation.id} answer ${status}, which /openapi.json does not list for it`,
        );
      }
    }
  }
});

test('no operation is named by two entries that set what positive data may be answered', () => {
  for (const operation of DESCRIBED) {
    const naming = WIDENINGS.filter((widening) => widening.names(operation));
    assert.ok(
      naming.length <= 1,
      `${operation.id} is named by ${naming.map((w) => w.label).join(' and ')}`,
    );
  }
});

test('every operation that lists a 422 may answer it to positive data, and no other may', () => {
  const documents422 = DESCRIBED.filter((operation) => operation.statuses.includes('422'));
  assert.not.ok(GLOBAL_STATUSES.includes('422'), 'the global list does not allow 422');
  const allowed = DESCRIBED.filter((operation) =>
    WIDENINGS.some((widening) => widening.names(operation) && widening.statuses.includes('422')),
  );
  assert.equal(
    allowed.map((operation) => operation.id).sort(),
    documents422.map((operation) => operation.id).sort(),
  );
});

test('every operation that lists a 304 may answer it to positive data', () => {
  const documents304 = DESCRIBED.filter((operation) => operation.statuses.includes('304'));
  assert.ok(documents304.length >= 4, 'the file reads and the storage link reads list a 304');
  const allowed = DESCRIBED.filter((operation) =>
    WIDENINGS.some((widening) => widening.names(operation) && widening.statuses.includes('304')),
  );
  assert.equal(
    allowed.map((operation) => operation.id).sort(),
    documents304.map((operation) => operation.id).sort(),
  );
});

test('the coverage phase sends every method the default engine can answer, leaving out only QUERY', () => {
  const methods = /^\[phases\.coverage\]\nunexpected-methods = \[(.+)\]$/m.exec(CONFIG)?.[1];
  assert.ok(methods, 'a [phases.coverage] entry');
  // Schemathesis's own list (config/_phases.py, DEFAULT_UNEXPECTED_METHODS) but QUERY.
  assert.equal(
    methods
      .split(', ')
      .map((method) => JSON.parse(method) as string)
      .sort(),
    ['delete', 'get', 'options', 'patch', 'post', 'put', 'trace'],
  );
});

test.run();
