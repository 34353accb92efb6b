import { z } from 'zod';

export type JsonSchema = Record<string, unknown> & { $defs?: Record<string, JsonSchema> };

/**
 * A zod schema as JSON Schema 2020-12 whose root is the object itself (not a `$ref`), with named
 * parts (`.meta({ id })`) kept in `$defs`. MCP needs an object at the root; OpenAPI hoists the
 * `$defs` into `components.schemas`.
 */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
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
