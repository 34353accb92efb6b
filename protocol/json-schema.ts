import { z } from 'zod';
import { MAX_INPUT_INTEGER, MIN_INPUT_INTEGER } from './input-guard.ts';

export type JsonSchema = Record<string, unknown> & { $defs?: Record<string, JsonSchema> };

/**
 * A zod schema as JSON Schema 2020-12 whose root is the object itself (not a `$ref`), with named
 * parts (`.meta({ id })`) kept in `$defs`. MCP needs an object at the root; OpenAPI hoists the
 * `$defs` into `components.schemas`.
 */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  let json = openAnyValue(z.toJSONSchema(schema, { io, unrepresentable: 'any' })) as JsonSchema;
  if (io === 'input') json = refuseNul(boundIntegers(json)) as JsonSchema;
  json = portablePatterns(json) as JsonSchema;
  delete json.$schema;
  const ref = json.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/$defs/') && json.$defs) {
    const name = ref.slice('#/$defs/'.length);
    const { [name]: root, ...rest } = json.$defs;
    const hoisted: JsonSchema = { ...root };
    // The root may be referred to from inside (recursion); keep it reachable under its name.
    if (JSON.stringify(rest).includes(`"#/$defs/${name}"`)) rest[name] = root as JsonSchema;
    if (Object.keys(rest).length > 0) hoisted.$defs = rest;
    return hoisted;
  }
  return json;
}

/**
 * zod writes "any value" (`z.unknown()`) as the empty schema `{}`. As `additionalProperties`,
 * strict validators (the MCP Inspector's `--strict`) flag `{}` as a schema that constrains
 * nothing by accident; `true` says the same on purpose, and every JSON Schema reader takes it.
 */
function openAnyValue(node: unknown, namesFields = false): unknown {
  if (Array.isArray(node)) return node.map((item) => openAnyValue(item));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    // Under `properties` and `$defs` the keys are names, not keywords.
    if (!namesFields && key === 'additionalProperties' && isEmptyObject(value)) out[key] = true;
    else out[key] = openAnyValue(value, !namesFields && (key === 'properties' || key === '$defs'));
  }
  return out;
}

function isEmptyObject(value: unknown): boolean {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.keys(value).length === 0
  );
}

/** Text without NUL (U+0000), which no input holds (protocol/input-guard.ts). */
const NO_NUL = '^[^\\x00]*$';

/**
 * Every string an operation takes, and every key of a record it takes, is refused with NUL in it
 * (protocol/input-guard.ts, on every door): the schemas say so, as a `pattern` on each string
 * that has none (one that has a pattern excludes NUL itself) and `propertyNames` on each record.
 */
function refuseNul(node: unknown, namesFields = false): unknown {
  if (Array.isArray(node)) return node.map((item) => refuseNul(item));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] = refuseNul(value, !namesFields && (key === 'properties' || key === '$defs'));
  }
  if (namesFields) return out;
  const free = !('enum' in out) && !('const' in out) && !('format' in out);
  if (out.type === 'string' && out.pattern === undefined && free) out.pattern = NO_NUL;
  if (out.type === 'object' && out.additionalProperties !== false && !('propertyNames' in out)) {
    out.propertyNames = { pattern: NO_NUL };
  }
  return out;
}

/**
 * Every integer an operation takes is held to the database's `integer` range
 * (protocol/input-guard.ts); the schemas say so, rather than zod's safe-integer bounds.
 */
function boundIntegers(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(boundIntegers);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = boundIntegers(value);
  if (out.type !== 'integer') return out;
  if (typeof out.maximum !== 'number' || out.maximum > MAX_INPUT_INTEGER) {
    if (typeof out.exclusiveMaximum !== 'number' || out.exclusiveMaximum > MAX_INPUT_INTEGER)
      out.maximum = MAX_INPUT_INTEGER;
  }
  if (typeof out.minimum !== 'number' || out.minimum < MIN_INPUT_INTEGER) {
    if (typeof out.exclusiveMinimum !== 'number' || out.exclusiveMinimum < MIN_INPUT_INTEGER)
      out.minimum = MIN_INPUT_INTEGER;
  }
  return out;
}

/**
 * Syntax a regular expression may use in a `pattern` only in JavaScript: Unicode property
 * escapes (`\p{L}`), code point escapes (`\u{1F600}`), lookbehind and named groups (`(?<`, which
 * Python spells `(?P<`), named back-references (`\k<`). Python's `re` (so its `jsonschema`),
 * Go's RE2 and others refuse these, and refuse the whole schema with them.
 */
const NON_PORTABLE_PATTERN = /\\[pP]\{|\\u\{|\(\?<|\\k<|\\u[0-9a-fA-F]{4}/;

/**
 * Every `pattern` in a form every regex dialect reads (JSON Schema validators outside JavaScript
 * included), so that a client may validate with the schemas it is given: `\u00XX` becomes
 * `\xXX` (the same character in every dialect); a pattern that still needs JavaScript (a Unicode
 * class such as `\p{L}`) is left out, and its `description`, which must state the rule in words,
 * says that the service checks it. The service itself still checks the original pattern.
 */
function portablePatterns(node: unknown, namesFields = false): unknown {
  if (Array.isArray(node)) return node.map((item) => portablePatterns(item));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    const field = !namesFields && (key === 'properties' || key === '$defs');
    out[key] = portablePatterns(value, field);
  }
  if (namesFields || typeof out.pattern !== 'string') return out;
  const pattern = spellControls(out.pattern).replace(
    /(?<!\\)((?:\\\\)*)\\u00([0-9a-fA-F]{2})/g,
    '$1\\x$2',
  );
  if (!NON_PORTABLE_PATTERN.test(pattern)) return { ...out, pattern };
  if (typeof out.description !== 'string') {
    throw new Error(
      `The pattern ${pattern} needs JavaScript's regular expressions: describe its rule in words (.describe()) so that the schema can leave it out.`,
    );
  }
  delete out.pattern;
  out.description = `${out.description} The service checks this rule itself (as the JavaScript pattern \`${pattern}\`, whose Unicode classes other regex dialects lack, so this schema states it in words only).`;
  return out;
}

/** Unicode's control characters (`\p{Cc}`): exactly C0, DEL and C1, which every dialect spells. */
const CONTROLS = '\\x00-\\x1f\\x7f-\\x9f';

/**
 * `\p{Cc}` written as the ranges it names (inside a class as they are, outside as a class of
 * them), so that a rule against control characters stays in the schema for every dialect.
 */
function spellControls(pattern: string): string {
  let inClass = false;
  let out = '';
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index] as string;
    if (char === '\\') {
      if (pattern.startsWith('\\p{Cc}', index)) {
        out += inClass ? CONTROLS : `[${CONTROLS}]`;
        index += '\\p{Cc}'.length - 1;
      } else {
        out += pattern.slice(index, index + 2);
        index++;
      }
      continue;
    }
    if (char === '[') inClass = true;
    else if (char === ']') inClass = false;
    out += char;
  }
  return out;
}
