import { isAlias, isMap, isScalar, isSeq, type Node, type Pair } from 'yaml';

/**
 * What a composed YAML document becomes once every alias is replaced by what it names, found on
 * the composed document before `toJS` allocates any of it. YAML's aliases repeat a node without
 * repeating its text: 40 KB that alias a 20,000-item list a hundred times are 2,000,000 values
 * and 8.6 MB of JSON, which the `yaml` package's own `maxAliasCount` lets through (it counts
 * aliases, not what they repeat). Here each anchored node's expansion is worked out once, and an
 * alias costs what its node cost, looked up, never walked again: the walk is linear in the
 * composed document, whatever the aliases multiply to. Merge keys (`<<: *a`, YAML 1.1) are
 * counted as the alias they hold, which is at least what they merge.
 *
 * Every parser of agents' YAML goes through here: the index's header reader
 * (actors/index/yaml-header.ts) and the mail door's command bodies (server/email/commands.ts).
 */

/** The bounds of one reader, and the words its refusals name it with. */
export interface ExpansionBounds {
  /** What is read, as a refusal starts: `The YAML header`. */
  subject: string;
  /** Who reads it, as a refusal names the bound: `the index reads`. */
  reader: string;
  /** Mappings and sequences inside one another, aliases resolved. */
  depth: number;
  anchors: number;
  aliases: number;
  tags: number;
  /** Values (scalars, mappings, sequences), aliases resolved. */
  values: number;
  /** Bytes of the JSON of the whole, aliases resolved. */
  bytes: number;
}

/** What a node becomes once every alias in it is replaced by what it names. */
interface Expansion {
  values: number;
  /** Bytes of its JSON, keys and separators counted. */
  bytes: number;
  /** Mappings and sequences inside one another (a scalar: 0). */
  depth: number;
}

/** What the walk has met so far, in document order. */
interface Walk {
  bounds: ExpansionBounds;
  anchors: number;
  aliases: number;
  tags: number;
  /** The last node met with each anchor: what an alias after it names. */
  named: Map<string, Node>;
  /** The expansion of each anchored node met and finished (absent while it is being walked). */
  expanded: Map<Node, Expansion>;
}

const NULL: Expansion = { values: 1, bytes: 4, depth: 0 };

/**
 * The first bound the document's contents pass, or its first duplicate key (scalars with the
 * same value, the `yaml` package's notion of equal keys, found with one Set per mapping), or
 * null: `toJS` may run.
 */
export function expansionProblem(contents: unknown, bounds: ExpansionBounds): string | null {
  const walked = walk(contents, 1, {
    bounds,
    anchors: 0,
    aliases: 0,
    tags: 0,
    named: new Map(),
    expanded: new Map(),
  });
  return typeof walked === 'string' ? walked : null;
}

/** The refusal of a document whose JSON passes `bounds.bytes` (`bytes`: as far as it was seen). */
export function expandsPast(bounds: ExpansionBounds, bytes: number): string {
  return `${bounds.subject} expands to more than ${bounds.bytes} bytes as JSON (at least ${bytes}; each alias counts as all it repeats); ${bounds.reader} at most ${bounds.bytes} bytes of it.`;
}

function nestsPast(bounds: ExpansionBounds): string {
  return `${bounds.subject} nests mappings and sequences more than ${bounds.depth} levels deep; ${bounds.reader} at most ${bounds.depth}.`;
}

function overBounds(expansion: Expansion, bounds: ExpansionBounds): string | null {
  if (expansion.values > bounds.values) {
    return `${bounds.subject} expands to more than ${bounds.values} values (each alias counts as all it repeats); ${bounds.reader} at most ${bounds.values}.`;
  }
  if (expansion.bytes > bounds.bytes) return expandsPast(bounds, expansion.bytes);
  return null;
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? 'null', 'utf8');
}

/** A node's expansion, or the first bound it passes. `depth`: the level it sits at (top: 1). */
function walk(node: unknown, depth: number, seen: Walk): Expansion | string {
  const { bounds } = seen;
  if (!node || typeof node !== 'object') return NULL;
  if (isAlias(node)) {
    if (++seen.aliases > bounds.aliases) {
      return `${bounds.subject} has more than ${bounds.aliases} aliases (*name); ${bounds.reader} at most ${bounds.aliases}.`;
    }
    const target = seen.named.get(node.source);
    const invalid = `${bounds.subject} is not valid: the alias *${node.source}`;
    if (!target) return `${invalid} has no anchor &${node.source} before it.`;
    const expansion = seen.expanded.get(target);
    if (!expansion) return `${invalid} is inside the node it names.`;
    if (depth - 1 + expansion.depth > bounds.depth) return nestsPast(bounds);
    return expansion;
  }
  const value = node as Node;
  if (value.anchor) {
    if (++seen.anchors > bounds.anchors) {
      return `${bounds.subject} has more than ${bounds.anchors} anchors (&name); ${bounds.reader} at most ${bounds.anchors}.`;
    }
    // Named before its children are walked: an alias among them is inside the node it names.
    seen.named.set(value.anchor, value);
  }
  if (value.tag && ++seen.tags > bounds.tags) {
    return `${bounds.subject} has more than ${bounds.tags} tags (!tag); ${bounds.reader} at most ${bounds.tags}.`;
  }
  const expansion = expand(value, depth, seen);
  if (typeof expansion === 'string') return expansion;
  if (value.anchor) seen.expanded.set(value, expansion);
  return expansion;
}

/** A node's own expansion: its children walked, summed as JSON holds them, checked as it grows. */
function expand(value: Node, depth: number, seen: Walk): Expansion | string {
  const { bounds } = seen;
  // A scalar's value is already composed (a `!!binary` one is its bytes): measure its JSON.
  if (isScalar(value)) return { values: 1, bytes: jsonBytes(value.value), depth: 0 };
  if (depth > bounds.depth) return nestsPast(bounds);
  // The brackets; a comma between two items is counted with each item.
  const sum: Expansion = { values: 1, bytes: 2, depth: 1 };
  const add = (part: Expansion): string | null => {
    sum.values += part.values;
    sum.bytes += part.bytes + 1;
    sum.depth = Math.max(sum.depth, part.depth + 1);
    return overBounds(sum, bounds);
  };
  if (isSeq(value)) {
    for (const item of value.items) {
      const part = walk(item, depth + 1, seen);
      const problem = typeof part === 'string' ? part : add(part);
      if (problem) return problem;
    }
    return sum;
  }
  if (isMap(value)) {
    const keys = new Set<unknown>();
    for (const pair of value.items as Pair<unknown, unknown>[]) {
      if (isScalar(pair.key)) {
        if (keys.has(pair.key.value)) {
          return `${bounds.subject} is not valid: Map keys must be unique (\`${String(pair.key.value)}\` appears twice).`;
        }
        keys.add(pair.key.value);
      }
      const key = walk(pair.key, depth + 1, seen);
      if (typeof key === 'string') return key;
      const item = walk(pair.value, depth + 1, seen);
      if (typeof item === 'string') return item;
      // A key becomes a JSON string: a scalar key its text quoted, any other its YAML text,
      // about as long as its JSON; then a colon.
      const keyBytes = isScalar(pair.key) ? jsonBytes(String(pair.key.value)) : key.bytes + 2;
      const problem = add({
        values: key.values + item.values,
        bytes: keyBytes + 1 + item.bytes,
        depth: Math.max(key.depth, item.depth),
      });
      if (problem) return problem;
    }
    return sum;
  }
  return NULL;
}
