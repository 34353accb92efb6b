import { ServiceError } from './errors.ts';
import type { JsonSchema } from './json-schema.ts';

/**
 * What no operation takes, whatever its schema says, checked on every input of every door
 * (server/invoke.ts, decodeInput): values the database or the runtime would choke on. Each
 * refusal is `invalid_input` naming the field, never a 500.
 *
 * - Objects and arrays nested deeper than MAX_INPUT_DEPTH: every recursive step after this one
 *   (JSON.stringify, zod, a hash of the request) would otherwise run out of stack.
 * - Text that is not well-formed: NUL (U+0000), which PostgreSQL's `text` and `jsonb` cannot
 *   hold, and lone UTF-16 surrogates (`\ud800` in JSON), which have no UTF-8 form, in any string
 *   or key.
 * - Keys named `__proto__`, `constructor` or `prototype` below the top level: assigning them
 *   rewires an object's prototype, so a record of free keys could carry inherited values. (At the
 *   top level they are unknown fields, which the operation's strict schema refuses.)
 * - Integers of an `integer` field outside a 32-bit signed range: the database's `integer`.
 *
 * The walks are iterative where the input sets the depth, so hostile input cannot overflow them.
 */

/** Levels of objects and arrays an input may nest, the input object itself being the first. */
export const MAX_INPUT_DEPTH = 64;
/** The range of every integer field: PostgreSQL's `integer`. */
export const MAX_INPUT_INTEGER = 2_147_483_647;
export const MIN_INPUT_INTEGER = -2_147_483_648;

const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** String.prototype.isWellFormed (Node 20), which this TypeScript lib does not declare yet. */
export function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** Text the service stores as it is: no NUL, no lone surrogate. */
function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && isWellFormed(text);
}

type Path = readonly (string | number)[];

/** A field path as the refusals name it (zod's way: `dimensions.price`, `files.0`). */
function fieldName(path: Path): string {
  return path.length === 0 ? '(body)' : path.join('.');
}

/**
 * Refuses raw input (a JSON value, or query and path fields) that nests too deep, holds NUL or a
 * lone surrogate, or names a prototype key below the top level. `pathField` is the operation's
 * file path (its rest parameter): ill-formed text there is `invalid_path`, as the HTTP router
 * answers it.
 */
export function refuseHostileShape(value: unknown, options: { pathField?: string } = {}): void {
  if (isPlain(value)) return;
  refuseFirstFault(value, options);
}

/**
 * Whether a value breaks none of the rules: the walk every request takes, so it keeps no paths
 * (refuseFirstFault walks again to name the field, only for input that is refused).
 */
function isPlain(value: unknown): boolean {
  if (typeof value === 'string') return isStorableText(value);
  if (value === null || typeof value !== 'object') return true;
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop() as Record<string, unknown>;
    const depth = depths.pop() as number;
    if (depth > MAX_INPUT_DEPTH) return false;
    const keys = Array.isArray(node) ? undefined : Object.keys(node);
    const length = keys ? keys.length : (node as unknown as unknown[]).length;
    for (let index = 0; index < length; index++) {
      let child: unknown;
      if (keys) {
        const key = keys[index] as string;
        if (!isStorableText(key) || (depth > 1 && PROTOTYPE_KEYS.has(key))) return false;
        child = node[key];
      } else child = (node as unknown as unknown[])[index];
      if (typeof child === 'string') {
        if (!isStorableText(child)) return false;
      } else if (child !== null && typeof child === 'object') {
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return true;
}

/** Throws the refusal of the first fault found, naming its field. */
function refuseFirstFault(value: unknown, options: { pathField?: string }): void {
  if (typeof value === 'string' && !isStorableText(value)) {
    throw illFormed(value, [], options.pathField);
  }
  if (value === null || typeof value !== 'object') return;
  // Each object or array once; its path is rebuilt from the parents only for a refusal.
  const pending: Visit[] = [{ node: value, key: undefined, parent: undefined, depth: 1 }];
  while (pending.length > 0) {
    const visit = pending.pop() as Visit;
    if (visit.depth > MAX_INPUT_DEPTH) throw tooDeep(pathOf(visit));
    const take = (key: string | number, child: unknown) => {
      if (typeof child === 'string') {
        if (!isStorableText(child)) throw illFormed(child, pathOf(visit, key), options.pathField);
      } else if (child !== null && typeof child === 'object') {
        pending.push({ node: child, key, parent: visit, depth: visit.depth + 1 });
      }
    };
    if (Array.isArray(visit.node)) {
      visit.node.forEach((child, index) => take(index, child));
      continue;
    }
    const node = visit.node as Record<string, unknown>;
    for (const key of Object.keys(node)) {
      if (!isStorableText(key)) throw illFormed(key, pathOf(visit, key), undefined, 'its name');
      if (visit.depth > 1 && PROTOTYPE_KEYS.has(key)) {
        throw invalidInput(
          fieldName(pathOf(visit, key)),
          `a key may not be named \`${key}\`; choose another name`,
        );
      }
      take(key, node[key]);
    }
  }
}

/** An object or array met on the walk, and how it was reached. */
interface Visit {
  node: object;
  key: string | number | undefined;
  parent: Visit | undefined;
  depth: number;
}

function pathOf(visit: Visit, last?: string | number): (string | number)[] {
  const path: (string | number)[] = last === undefined ? [] : [last];
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) {
    path.unshift(at.key);
  }
  return path;
}

/** The depth of a JSON value, counted up to `limit + 1` at most (then it is too deep anyway). */
export function nestingExceeds(value: unknown, limit: number): boolean {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  while (pending.length > 0) {
    const { value: node, depth } = pending.pop() as { value: unknown; depth: number };
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Object.values(node)) pending.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/** The refusal of text holding NUL or a lone surrogate, naming which. */
function illFormed(
  text: string,
  path: Path,
  pathField: string | undefined,
  where = 'it',
): ServiceError {
  const field = fieldName(path);
  const nul = text.includes('\u0000');
  if (pathField !== undefined && path.length === 1 && path[0] === pathField) {
    return new ServiceError(
      'invalid_path',
      nul
        ? `The \`${field}\` holds NUL (%00).`
        : `The \`${field}\` is not valid UTF-8 (it holds a lone surrogate).`,
      { field, rule: nul ? 'control_character' : 'not_utf8' },
    );
  }
  return invalidInput(
    field,
    nul
      ? `holds NUL (U+0000) in ${where}; text may not contain NUL. Remove it (send binary data as a file)`
      : `holds a lone UTF-16 surrogate in ${where}, which is not text (it has no UTF-8 form); send well-formed Unicode`,
    { rule: nul ? 'nul' : 'lone_surrogate' },
  );
}

/** The same shape as the schema's own refusals (server/invoke.ts): `field` and `issues`. */
function invalidInput(
  field: string,
  message: string,
  extra: Record<string, unknown> = {},
): ServiceError {
  return new ServiceError('invalid_input', `${field}: ${message}.`, {
    field,
    issues: [{ field, message }],
    ...extra,
  });
}

function tooDeep(path: Path): ServiceError {
  const field = fieldName(path.slice(0, 1));
  return invalidInput(
    field,
    `nests objects and arrays deeper than ${MAX_INPUT_DEPTH} levels; send a flatter value`,
    { max_depth: MAX_INPUT_DEPTH },
  );
}

/** Refuses a decoded input (`undefined`: it passes); made once per schema by integerRangeCheck. */
export type IntegerRangeCheck = (value: unknown) => void;

/**
 * The check of a decoded input against the database's integer range, for the `integer` fields
 * its JSON Schema (the operation's input) declares; null when it declares none. Compiled once, so
 * a request walks only the parts of its input that can hold an integer.
 */
export function integerRangeCheck(schema: JsonSchema): IntegerRangeCheck | null {
  const check = compile(schema, schema, 0);
  if (!check) return null;
  return (value) => {
    const path = check(value, []);
    if (path === undefined) return;
    throw invalidInput(
      fieldName(path),
      `is outside the range this service takes for whole numbers (${MIN_INPUT_INTEGER} to ${MAX_INPUT_INTEGER})`,
      { minimum: MIN_INPUT_INTEGER, maximum: MAX_INPUT_INTEGER },
    );
  };
}

/** Where in `value` an integer is out of range, or undefined. */
type Walk = (value: unknown, path: Path) => Path | undefined;

/** Schemas nest less than this; a deeper one is recursive, and its depths are not walked. */
const MAX_SCHEMA_DEPTH = 32;

function compile(root: JsonSchema, node: unknown, depth: number): Walk | null {
  const schema = resolve(root, asSchema(node));
  if (!schema || depth > MAX_SCHEMA_DEPTH) return null;
  const walks: Walk[] = [];
  const type = schema.type;
  if (type === 'integer' || (Array.isArray(type) && type.includes('integer'))) {
    walks.push((value, path) =>
      typeof value === 'number' && (value > MAX_INPUT_INTEGER || value < MIN_INPUT_INTEGER)
        ? path
        : undefined,
    );
  }
  for (const list of [schema.anyOf, schema.oneOf, schema.allOf]) {
    for (const branch of Array.isArray(list) ? list : []) {
      const walk = compile(root, branch, depth + 1);
      if (walk) walks.push(walk);
    }
  }
  const items = compile(root, schema.items, depth + 1);
  if (items) {
    walks.push((value, path) => {
      if (!Array.isArray(value)) return undefined;
      for (let index = 0; index < value.length; index++) {
        const found = items(value[index], [...path, index]);
        if (found) return found;
      }
      return undefined;
    });
  }
  const declared = Object.entries(asSchema(schema.properties) ?? {});
  const fields = declared.flatMap(([key, sub]) => {
    const walk = compile(root, sub, depth + 1);
    return walk ? [[key, walk] as const] : [];
  });
  const others = compile(root, schema.additionalProperties, depth + 1);
  if (fields.length > 0 || others) {
    const names = new Set(declared.map(([key]) => key));
    walks.push((value, path) => {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
      const record = value as Record<string, unknown>;
      for (const [key, walk] of fields) {
        const found = Object.hasOwn(record, key) && walk(record[key], [...path, key]);
        if (found) return found;
      }
      if (!others) return undefined;
      for (const key of Object.keys(record)) {
        const found = !names.has(key) && others(record[key], [...path, key]);
        if (found) return found;
      }
      return undefined;
    });
  }
  if (walks.length === 0) return null;
  return (value, path) => {
    for (const walk of walks) {
      const found = walk(value, path);
      if (found) return found;
    }
    return undefined;
  };
}

function resolve(root: JsonSchema, node: JsonSchema | undefined): JsonSchema | undefined {
  const ref = node?.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/$defs/')) return node;
  return root.$defs?.[ref.slice('#/$defs/'.length)];
}

function asSchema(value: unknown): JsonSchema | undefined {
  return value !== null && typeof value === 'object' ? (value as JsonSchema) : undefined;
}
