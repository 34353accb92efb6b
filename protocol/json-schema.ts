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
