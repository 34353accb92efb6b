import { isMap, parseDocument } from 'yaml';
import { ServiceError } from '../../protocol/errors.ts';
import { refuseHostileShape } from '../../protocol/input-guard.ts';
import { INDEX_FIELDS_MAX_BYTES } from '../../storage/index/file-index.ts';
import {
  expandsPast,
  expansionProblem,
  type ExpansionBounds,
} from '../../protocol/yaml-expansion.ts';

/**
 * Reads a markdown file's YAML header within bounds, on whichever thread calls it (the event
 * loop for small headers, the header thread for the rest: header-thread.ts). The `yaml`
 * package has two quadratic paths: its duplicate-key check (`uniqueKeys`, every key compared
 * with every earlier one: 30,000 keys took 10 s) and alias resolution (every alias scans every
 * anchor before it). Here duplicates are found with one Set per mapping, and anchors, aliases,
 * tags and nesting are counted on the composed document before it is turned into values, so
 * every step is linear in the header's bytes, which the caller caps. Aliases are bounded by what
 * they expand to, not by their number: 100 aliases of a 20,000-item list are 2,000,000 values
 * from 40 KB of text, so the values and the JSON bytes of the header with every alias resolved
 * are counted on the composed document too, and refused before they are allocated.
 */

/** The bounds of a header the index reads; past any of them the file saves with an error. */
export const HEADER_LIMITS = {
  /** UTF-8 bytes between the `---` lines. */
  bytes: 64 * 1024,
  /** Keys of the top-level mapping. */
  keys: 1000,
  /** Mappings and sequences inside one another. */
  depth: 32,
  anchors: 100,
  aliases: 100,
  tags: 1000,
  /**
   * Values once every alias is replaced by what it names (a plain 64 KiB header has fewer);
   * the bytes of the same are bounded by INDEX_FIELDS_MAX_BYTES, what the index stores.
   */
  expandedNodes: 100_000,
} as const;

/** A header read: its fields, or why it is not indexed. */
export type HeaderReading = { fields: Record<string, unknown> } | { error: string };

const INVALID = 'The YAML header is not valid:';

/** The header's bounds as the expansion walk (yaml-expansion.ts) holds them. */
const HEADER_EXPANSION: ExpansionBounds = {
  subject: 'The YAML header',
  reader: 'the index reads',
  depth: HEADER_LIMITS.depth,
  anchors: HEADER_LIMITS.anchors,
  aliases: HEADER_LIMITS.aliases,
  tags: HEADER_LIMITS.tags,
  values: HEADER_LIMITS.expandedNodes,
  bytes: INDEX_FIELDS_MAX_BYTES,
};

function tooManyKeys(): string {
  return `The YAML header has more than ${HEADER_LIMITS.keys} top-level keys; the index reads at most ${HEADER_LIMITS.keys}.`;
}

function tooDeep(): string {
  return `The YAML header nests mappings and sequences more than ${HEADER_LIMITS.depth} levels deep; the index reads at most ${HEADER_LIMITS.depth}.`;
}

/**
 * What can be told of a header from its text alone, in one pass and before any parsing: its
 * size, an upper bound on its top-level keys (a top-level key starts a line at column 0), an
 * upper bound on its flow nesting (brackets), and how much structure it has (indicator
 * characters: every node past the first few needs one), which says what parsing it will cost.
 */
export interface HeaderShape {
  bytes: number;
  keyLines: number;
  deepestBracket: number;
  /** Characters that start or separate nodes: `: , - ? [ ] { } | >`. */
  indicators: number;
  /** Characters that start anchors, aliases and tags: `& * !`. */
  references: number;
}

/** What each ASCII character is to the scan, looked up by its code. */
const [INDICATOR, REFERENCE, OPENS, CLOSES] = [1, 2, 4, 8];
const KIND = new Uint8Array(128);
for (const char of ':,-?|>') KIND[char.charCodeAt(0)] = INDICATOR;
for (const char of '&*!') KIND[char.charCodeAt(0)] = REFERENCE;
for (const char of '[{') KIND[char.charCodeAt(0)] = INDICATOR | OPENS;
for (const char of ']}') KIND[char.charCodeAt(0)] = INDICATOR | CLOSES;
const BLANK = new Set([...' \t\r\n#'].map((char) => char.charCodeAt(0)));
const NEWLINE = 10;

export function measureHeader(source: string): HeaderShape {
  const shape = { bytes: Buffer.byteLength(source, 'utf8'), keyLines: 0, deepestBracket: 0 };
  // Past the byte bound nothing else is asked: the scan stays within 64 KiB.
  if (shape.bytes > HEADER_LIMITS.bytes) return { ...shape, indicators: 0, references: 0 };
  let depth = 0;
  let indicators = 0;
  let references = 0;
  let lineStart = true;
  for (let i = 0; i < source.length; i++) {
    const code = source.charCodeAt(i);
    // A line that starts with neither a blank nor a comment may start a top-level key.
    if (lineStart && !BLANK.has(code)) shape.keyLines++;
    lineStart = code === NEWLINE;
    const kind = code < 128 ? (KIND[code] as number) : 0;
    if (kind === 0) continue;
    if (kind & REFERENCE) references++;
    if (kind & INDICATOR) indicators++;
    if (kind & OPENS) shape.deepestBracket = Math.max(shape.deepestBracket, ++depth);
    if (kind & CLOSES && depth > 0) depth--;
  }
  return { ...shape, indicators, references };
}

/** The first bound a header's text passes before any parsing, or null: it may be parsed. */
export function headerOverBounds(shape: HeaderShape): string | null {
  if (shape.bytes > HEADER_LIMITS.bytes) {
    return `The YAML header is ${shape.bytes} bytes; the index reads headers of at most ${HEADER_LIMITS.bytes} bytes (64 KiB).`;
  }
  if (shape.keyLines > HEADER_LIMITS.keys) return tooManyKeys();
  if (shape.deepestBracket > HEADER_LIMITS.depth) return tooDeep();
  return null;
}

/** Reads a header's source (the text between the `---` lines) into fields, within the bounds. */
export function readHeader(source: string): HeaderReading {
  const over = headerOverBounds(measureHeader(source));
  if (over) return { error: over };
  // uniqueKeys off: the walk finds duplicates in linear time instead.
  const document = parseDocument(source, { uniqueKeys: false, prettyErrors: true });
  if (document.errors.length > 0) {
    return { error: `${INVALID} ${firstLine(document.errors[0]?.message)}` };
  }
  const top = document.contents;
  if (isMap(top) && top.items.length > HEADER_LIMITS.keys) return { error: tooManyKeys() };
  const problem = expansionProblem(top, HEADER_EXPANSION);
  if (problem) return { error: problem };
  let header: unknown;
  let json: string;
  try {
    header = document.toJS({ maxAliasCount: 100 });
    json = JSON.stringify(header) ?? 'null';
  } catch (error) {
    return { error: `${INVALID} ${firstLine((error as Error).message)}` };
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    return { error: 'The YAML header must be a mapping of keys to values (`key: value` lines).' };
  }
  // Text the database cannot hold (NUL, a lone surrogate such as "\ud800"), as in any input.
  try {
    refuseHostileShape(header);
  } catch (error) {
    if (error instanceof ServiceError) return { error: `The YAML header ${unstorable(error)}` };
    throw error;
  }
  // The walk's figure is an estimate; the JSON the index stores is measured.
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > INDEX_FIELDS_MAX_BYTES) return { error: expandsPast(HEADER_EXPANSION, bytes) };
  return { fields: JSON.parse(json) as Record<string, unknown> };
}

/** The input guard's refusal as words about the header: `field: why`. */
function unstorable(error: ServiceError): string {
  return `field ${error.message.replace(/\.$/, '')}.`;
}

function firstLine(message: string | undefined): string {
  return (message ?? 'unreadable').split('\n')[0] as string;
}
