import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { ServiceError } from '../../protocol/errors.ts';
import {
  integerRangeCheck,
  MAX_INPUT_DEPTH,
  MAX_INPUT_INTEGER,
  MIN_INPUT_INTEGER,
  refuseHostileShape,
} from '../../protocol/input-guard.ts';
import { toJsonSchema } from '../../protocol/json-schema.ts';

const test = suite('input guards');

/** What a guard answers for a value: `ok`, or `code field`. */
function verdict(check: () => void): string {
  try {
    check();
    return 'ok';
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    return `${error.code} ${String(error.extra.field)}`;
  }
}

const shape = (value: unknown, pathField?: string) =>
  verdict(() => refuseHostileShape(value, { pathField }));

/** An array nested `levels` deep inside `{ field: ... }`: the input object is one level more. */
const nested = (levels: number): unknown => {
  let value: unknown = [];
  for (let i = 1; i < levels; i++) value = [value];
  return { field: value };
};

test('NUL is found in any string and any key, and named by its path', () => {
  assert.is(shape({ a: 'x\u0000' }), 'invalid_input a');
  assert.is(shape({ a: [{ b: ['ok', 'n\u0000'] }] }), 'invalid_input a.0.b.1');
  assert.is(shape({ a: { 'k\u0000': 1 } }), 'invalid_input a.k\u0000');
  assert.is(shape({ a: 'plain', b: [1, true, null, { c: 'fine' }] }), 'ok');
});

test('NUL in the file path field is invalid_path, as the HTTP router answers it', () => {
  assert.is(shape({ path: 'a\u0000.md' }, 'path'), 'invalid_path path');
  assert.is(shape({ note: 'a\u0000' }, 'path'), 'invalid_input note');
});

test('a lone surrogate is found in any string and any key, and a well-formed pair passes', () => {
  assert.is(shape({ a: 'x\ud800' }), 'invalid_input a');
  assert.is(shape({ a: ['ok', { b: '\udc00y' }] }), 'invalid_input a.1.b');
  assert.is(shape({ a: { 'k\udfff': 1 } }), 'invalid_input a.k\udfff');
  assert.is(shape({ path: 'a\ud800.md' }, 'path'), 'invalid_path path');
  assert.is(shape({ a: 'emoji \ud83d\ude00 is a pair' }), 'ok');
});

test(`nesting is taken up to ${MAX_INPUT_DEPTH} levels and refused past it, naming the top field`, () => {
  assert.is(shape(nested(MAX_INPUT_DEPTH - 1)), 'ok');
  assert.is(shape(nested(MAX_INPUT_DEPTH)), 'invalid_input field');
  assert.is(shape(nested(100_000)), 'invalid_input field', 'no stack is used up');
});

test('prototype keys are refused below the top level (the top level is the schema`s to refuse)', () => {
  for (const key of ['__proto__', 'constructor', 'prototype']) {
    const inside = JSON.parse(`{"d": {"${key}": {"x": 1}}}`) as unknown;
    assert.is(shape(inside), `invalid_input d.${key}`);
    assert.is(shape(JSON.parse(`{"${key}": 1}`)), 'ok');
  }
});

test('integer fields are held to the database range, wherever the schema puts them', () => {
  const schema = z.strictObject({
    version: z.int().optional(),
    ratio: z.number().optional(),
    list: z.array(z.object({ n: z.int() })).optional(),
    either: z.union([z.string(), z.int()]).optional(),
    free: z.record(z.string(), z.int()).optional(),
  });
  const check = integerRangeCheck(toJsonSchema(schema, 'input'));
  assert.ok(check);
  const range = (value: unknown) => verdict(() => check(value));
  assert.is(range({ version: MAX_INPUT_INTEGER }), 'ok');
  assert.is(range({ version: MIN_INPUT_INTEGER }), 'ok');
  assert.is(range({ version: MAX_INPUT_INTEGER + 1 }), 'invalid_input version');
  assert.is(range({ version: MIN_INPUT_INTEGER - 1 }), 'invalid_input version');
  assert.is(range({ ratio: 1e12 }), 'ok', 'a number that is not an integer field is not held');
  assert.is(range({ list: [{ n: 1 }, { n: 99_999_999_999 }] }), 'invalid_input list.1.n');
  assert.is(range({ either: 99_999_999_999 }), 'invalid_input either');
  assert.is(range({ either: 'text' }), 'ok');
  assert.is(range({ free: { a: 1, b: -99_999_999_999 } }), 'invalid_input free.b');
  assert.is(integerRangeCheck(toJsonSchema(z.strictObject({ s: z.string() }), 'input')), null);
});

test('the input schemas say the range: integers carry its bounds', () => {
  const json = toJsonSchema(z.strictObject({ n: z.int().positive() }), 'input') as {
    properties: { n: Record<string, unknown> };
  };
  assert.equal(json.properties.n, {
    type: 'integer',
    exclusiveMinimum: 0,
    maximum: MAX_INPUT_INTEGER,
  });
});

test.run();
