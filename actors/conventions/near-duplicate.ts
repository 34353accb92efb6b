/**
 * The rule that refuses a proposed convention nearly the same as one that exists already: a new
 * convention is for what none of the existing ones fits. A pure function of its input; the
 * candidates it compares against come from storage (nearDuplicateCandidates).
 */
import type { ConventionDimension } from '../../protocol/conventions/known.ts';
import {
  KEY_OVERLAP,
  NAME_EDIT_DISTANCE,
  NAME_MIN_LENGTH,
  sortedNameWords,
  squashName,
} from '../../storage/conventions/convention-keys.ts';
import { levenshtein } from './edit-distance.ts';

/**
 * The most edits apart two convention names may be and count as near-duplicates. The indexed
 * lookup of candidates (storage/conventions/convention-keys.ts) is built for these three numbers.
 */
const DUPLICATE_NAME_DISTANCE = NAME_EDIT_DISTANCE;

/** Names shorter than this (separators removed) are never compared by edit distance. */
const DUPLICATE_NAME_MIN_LENGTH = NAME_MIN_LENGTH;

/** The share of dimension keys two conventions may have in common before they count as one. */
const DUPLICATE_KEY_OVERLAP = KEY_OVERLAP;

/**
 * The existing convention a proposed one nearly duplicates, with the reason, or null: a new
 * convention is for what none of the existing ones fits. Names are compared with their
 * separators (`-`, `_`) removed. A proposal duplicates an existing convention when, checked in
 * this order against every existing one:
 * 1. its name is the same (`localservices`, `local_services` for `local-services`);
 * 2. its name is at most 2 edits (Levenshtein) away, both names being at least 5 letters long
 *    (`local-service`, `locale-services`);
 * 3. its name has the same words in another order, a trailing `s` ignored (`services-local`,
 *    `service-local`);
 * 4. its dimension keys overlap the existing one's by 80% or more: the keys both have, divided by
 *    the keys either has (Jaccard index), so a renamed copy of a convention is caught.
 * `existing` may be every convention or only the candidates storage/conventions/conventions.ts finds by
 * index (nearDuplicateCandidates), in the same order: the answer is the same.
 */
export function nearDuplicate(
  proposal: { name: string; description: string; dimensions: readonly ConventionDimension[] },
  existing: readonly { name: string; dimensions: readonly ConventionDimension[] }[],
): { name: string; reason: string } | null {
  const squashed = squashName(proposal.name);
  const nameWords = sortedNameWords(proposal.name);
  const keys = new Set(proposal.dimensions.map((dimension) => dimension.key));

  const rules: Array<(other: (typeof existing)[number]) => string | null> = [
    (other) =>
      squashName(other.name) === squashed
        ? `its name is '${other.name}' with the separators ignored`
        : null,
    (other) => {
      const otherSquashed = squashName(other.name);
      if (Math.min(squashed.length, otherSquashed.length) < DUPLICATE_NAME_MIN_LENGTH) return null;
      const distance = levenshtein(squashed, otherSquashed);
      return distance <= DUPLICATE_NAME_DISTANCE
        ? `its name is ${distance} edit${distance === 1 ? '' : 's'} from '${other.name}'`
        : null;
    },
    (other) =>
      sortedNameWords(other.name) === nameWords
        ? `its name has the words of '${other.name}' in another order`
        : null,
    (other) => {
      const otherKeys = new Set(other.dimensions.map((dimension) => dimension.key));
      const shared = [...keys].filter((key) => otherKeys.has(key)).length;
      const either = new Set([...keys, ...otherKeys]).size;
      if (either === 0 || shared / either < DUPLICATE_KEY_OVERLAP) return null;
      return `its dimension keys overlap those of '${other.name}' by ${Math.round((100 * shared) / either)}% (${shared} shared of ${either})`;
    },
  ];

  for (const rule of rules) {
    for (const other of existing) {
      const reason = rule(other);
      if (reason) return { name: other.name, reason };
    }
  }
  return null;
}
