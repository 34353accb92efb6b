import { createHash } from 'node:crypto';

/**
 * The keys that let the near-duplicate rules of actors/conventions/near-duplicate.ts find their
 * candidates by index lookups (migration 017) instead of reading every convention. Each
 * convention stores its keys when it is written; a proposal is turned into the probes that find,
 * among the stored keys, a superset of the conventions any rule can match. The rules themselves
 * then decide on that short list, so every rule behaves exactly as it did over the whole table.
 *
 * Migration 017 computes the same keys in SQL for the rows that existed before it; keep the two
 * in step (test/storage/convention-keys-backfill.test.ts compares them).
 */

/** The most edits apart two names may be and count as near-duplicates (rule 2). */
export const NAME_EDIT_DISTANCE = 2;

/** Rule 2 looks only at names of at least this many characters (separators removed). */
export const NAME_MIN_LENGTH = 5;

/** The share of dimension keys two conventions must have in common to be near-duplicates (rule 4). */
export const KEY_OVERLAP = 0.8;

/** A name in lower case with its separators (`-`, `_`, spaces) removed: `pet-care` → `petcare`. */
export function squashName(name: string): string {
  return name.toLowerCase().replace(/[-_\s]+/g, '');
}

/**
 * A name's words in lower case, a plural `s` dropped from words longer than three letters,
 * sorted and joined by spaces: `sitting-pets` → `pet sitting`.
 */
export function sortedNameWords(name: string): string {
  return name
    .toLowerCase()
    .split(/[-_\s]+/)
    .filter((word) => word !== '')
    .map((word) => (word.length > 3 && word.endsWith('s') ? word.slice(0, -1) : word))
    .sort()
    .join(' ');
}

/** One piece of a squashed name: the name's length, which piece (0, 1, 2) and its text. */
export interface NamePiece {
  length: number;
  piece: number;
  text: string;
}

const PIECES = NAME_EDIT_DISTANCE + 1;

/** Where piece `piece` of a name of `length` characters starts, and how long it is. */
function pieceSpan(length: number, piece: number): { start: number; size: number } {
  const start = Math.floor((piece * length) / PIECES);
  return { start, size: Math.floor(((piece + 1) * length) / PIECES) - start };
}

/**
 * A stored name cut into three pieces at places fixed by its length. Two edits touch at most
 * two pieces, so a name within two edits of it holds one piece unchanged, at most two places
 * from where it was (the pigeonhole rule of approximate matching). Names too short for rule 2
 * have none.
 */
export function namePieces(squashed: string): NamePiece[] {
  if (squashed.length < NAME_MIN_LENGTH) return [];
  return Array.from({ length: PIECES }, (_, piece) => {
    const { start, size } = pieceSpan(squashed.length, piece);
    return { length: squashed.length, piece, text: squashed.slice(start, start + size) };
  });
}

/**
 * What a proposed name looks up among the stored pieces: for every length a name within two
 * edits may have, each piece such a name has, read from the proposal at each place it may have
 * moved to. Every stored name within two edits shares at least one of these (namePieces).
 */
export function namePieceProbes(squashed: string): NamePiece[] {
  if (squashed.length < NAME_MIN_LENGTH) return [];
  const probes = new Map<string, NamePiece>();
  for (let d = -NAME_EDIT_DISTANCE; d <= NAME_EDIT_DISTANCE; d++) {
    const length = squashed.length + d;
    if (length < NAME_MIN_LENGTH) continue;
    for (let piece = 0; piece < PIECES; piece++) {
      const { start, size } = pieceSpan(length, piece);
      for (let shift = -NAME_EDIT_DISTANCE; shift <= NAME_EDIT_DISTANCE; shift++) {
        const from = start + shift;
        if (from < 0 || from + size > squashed.length) continue;
        const text = squashed.slice(from, from + size);
        probes.set(`${length}\u0000${piece}\u0000${text}`, { length, piece, text });
      }
    }
  }
  return [...probes.values()];
}

/** The order every key set is read in for its prefix: by md5, so common words do not bunch up. */
function keyRank(key: string): string {
  return createHash('md5').update(key).digest('hex');
}

/**
 * The first keys of a set, in one fixed order, that any set sharing `KEY_OVERLAP` of the keys
 * of the two together must share one of (the prefix filter of set-similarity joins): with
 * n keys, the first n - ⌈0.8·n⌉ + 1. Two sets whose prefixes are disjoint cannot overlap by 80%.
 */
export function keyPrefix(keys: readonly string[]): string[] {
  const distinct = [...new Set(keys)].sort((a, b) => (keyRank(a) < keyRank(b) ? -1 : 1));
  // A hair under the threshold: a longer prefix only finds more candidates, never fewer.
  const needed = Math.ceil(KEY_OVERLAP * distinct.length - 1e-9);
  return distinct.slice(0, distinct.length - needed + 1);
}

/**
 * How many distinct keys another set may have and still overlap one of `count` keys by 80%:
 * the smaller set holds at least 80% of the larger.
 */
export function keyCountRange(count: number): { least: number; most: number } {
  return {
    least: Math.floor(KEY_OVERLAP * count),
    most: Math.ceil(count / KEY_OVERLAP),
  };
}

/** Everything a convention stores for the near-duplicate lookups. */
export interface ConventionKeys {
  squashed: string;
  words: string;
  pieces: NamePiece[];
  keyPrefix: string[];
  keyCount: number;
}

export function conventionKeys(name: string, dimensionKeys: readonly string[]): ConventionKeys {
  const squashed = squashName(name);
  return {
    squashed,
    words: sortedNameWords(name),
    pieces: namePieces(squashed),
    keyPrefix: keyPrefix(dimensionKeys),
    keyCount: new Set(dimensionKeys).size,
  };
}
