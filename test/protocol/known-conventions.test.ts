import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  KNOWN_CONVENTIONS,
  TRUNK_FIELDS,
  type ConventionDefinition,
  type ConventionDimension,
} from '../../protocol/conventions/known.ts';

const test = suite('known conventions');

const KEY = /^[a-z][a-z0-9_]{0,39}$/;
const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const trunk: readonly string[] = TRUNK_FIELDS;

function convention(name: string): ConventionDefinition {
  const found = KNOWN_CONVENTIONS.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no known convention ${name}`);
  return found;
}

function dimension(conventionName: string, key: string): ConventionDimension {
  const found = convention(conventionName).dimensions.find((candidate) => candidate.key === key);
  if (!found) throw new Error(`${conventionName} has no dimension ${key}`);
  return found;
}

/** Every dimension with the convention it belongs to, for messages that say where. */
const everyDimension = KNOWN_CONVENTIONS.flatMap((known) =>
  known.dimensions.map((field) => ({ where: `${known.name}.${field.key}`, field })),
);

test('the six known conventions are exactly the ones the index protocol names', () => {
  assert.equal(KNOWN_CONVENTIONS.map((known) => known.name).sort(), [
    'agent-help',
    'agent-services',
    'agent-tools',
    'legal-services',
    'local-services',
    'website-build',
  ]);
});

test('every convention is named in lowercase kebab and says what belongs on it', () => {
  for (const known of KNOWN_CONVENTIONS) {
    assert.ok(KEBAB.test(known.name), known.name);
    assert.ok(known.description.trim().length > 0, `${known.name} has no description`);
  }
});

test('every convention extends the trunk with 5 to 9 dimensions', () => {
  for (const known of KNOWN_CONVENTIONS) {
    const count = known.dimensions.length;
    assert.ok(count >= 5 && count <= 9, `${known.name} has ${count} dimensions`);
  }
});

test('dimension keys are unique within a convention', () => {
  for (const known of KNOWN_CONVENTIONS) {
    const keys = known.dimensions.map((field) => field.key);
    assert.equal(new Set(keys).size, keys.length, `${known.name} repeats a key: ${keys}`);
  }
});

test('every dimension key is a snake_case YAML header key', () => {
  for (const { where, field } of everyDimension) assert.ok(KEY.test(field.key), where);
});

test('no convention redefines a trunk field', () => {
  for (const { where, field } of everyDimension) {
    assert.not.ok(trunk.includes(field.key), `${where} redefines the trunk`);
  }
});

test('every dimension has a label and a description for the listing author', () => {
  for (const { where, field } of everyDimension) {
    assert.ok(field.label.trim().length > 0, `${where} has no label`);
    assert.ok(field.description.trim().length > 0, `${where} has no description`);
  }
});

test('every list of allowed values is non-empty, unique and lowercase kebab', () => {
  for (const { where, field } of everyDimension) {
    if (field.values === undefined) continue;
    assert.ok(field.values.length > 0, `${where} allows no value at all`);
    assert.equal(new Set(field.values).size, field.values.length, `${where} repeats a value`);
    for (const value of field.values) assert.ok(KEBAB.test(value), `${where}: ${value}`);
  }
});

test('every convention marks one or two fields as required for matching', () => {
  for (const known of KNOWN_CONVENTIONS) {
    const required = known.dimensions.filter((field) => field.required).length;
    assert.ok(required >= 1 && required <= 2, `${known.name} requires ${required} fields`);
  }
});

test('every placement starts at the root and no two conventions share a cell', () => {
  for (const known of KNOWN_CONVENTIONS) assert.is(known.placement[0], 'root', known.name);
  const cells = KNOWN_CONVENTIONS.map((known) => known.placement.join('/'));
  assert.equal(new Set(cells).size, cells.length, `shared cell among ${cells}`);
});

test('agent-services carries its eight dimensions in the agreed order', () => {
  assert.equal(
    convention('agent-services').dimensions.map((field) => field.label),
    [
      'Task type',
      'Input',
      'Output',
      'Interface',
      'Verification',
      'Turnaround',
      'Payment',
      'Contact method',
    ],
  );
});

test('the place fields of local-services, legal-services and agent-help lie on the place axis', () => {
  assert.is(dimension('local-services', 'location').axis, 'place');
  assert.is(dimension('legal-services', 'city').axis, 'place');
  assert.is(dimension('agent-help', 'metro').axis, 'place');
});

test('every convention but agent-tools has a field on the price axis', () => {
  for (const known of KNOWN_CONVENTIONS) {
    if (known.name === 'agent-tools') continue;
    assert.ok(
      known.dimensions.some((field) => field.axis === 'price'),
      `${known.name} has no price`,
    );
  }
});

test('agent-help delivery offers remote, in-person and local-only help', () => {
  assert.equal(dimension('agent-help', 'delivery').values, ['remote', 'in-person', 'local-only']);
});

test.run();
