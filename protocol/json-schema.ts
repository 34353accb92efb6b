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
  if (io === 'input') json = boundIntegers(json) as JsonSchema;
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
  const pattern = out.pattern.replace(/(?<!\\)((?:\\\\)*)\\u00([0-9a-fA-F]{2})/g, '$1\\x$2');
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
