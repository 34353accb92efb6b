/**
 * The rules a listing must pass before the store keeps it: its trunk fields within their limits,
 * its dimensions as its convention defines them, and the reserved convention's terms. A pure
 * function of its input: the store (actors/store/listing-rules.ts) turns the problems into one
 * `listing_invalid` answer.
 */
import type { ConventionDefinition } from '../../protocol/conventions/known.ts';
import { optionalText, requiredText, textTooLong, type Problem } from './problems.ts';
import { RESERVED_CONVENTION } from './reserved-name.ts';

/**
 * The longest a listing's fields may be, in characters: its trunk fields, each dimension value
 * (or each item of a list value), and the number of items a list value may hold.
 */
const LISTING_LIMITS = {
  name: 200,
  description: 4000,
  need: 4000,
  can: 4000,
  contact: 500,
  dimensionValue: 500,
  dimensionListItems: 20,
} as const;

/** A listing as its author sent it: the trunk fields unchecked, the dimensions by key. */
export interface ListingInput {
  kind: 'need' | 'can';
  name?: unknown;
  description?: unknown;
  need?: unknown;
  can?: unknown;
  contact?: unknown;
  dimensions: Record<string, unknown>;
}

/**
 * What is wrong with a listing, or nothing. `name` (at most 200 characters) and `description`
 * (at most 4,000) are required non-empty strings. A need listing must say what it needs in `need`,
 * a can listing what it can do in `can` (at most 4,000 characters each; the other one is
 * optional). `contact`, if given, is a string of at most 500 characters.
 *
 * A listing on the trunk alone (no convention) has no dimensions. On a convention, every
 * dimension key must be one of the convention's keys. A value is text, a number or true/false,
 * or a list of at most 20 of those; text is at most 500 characters. Where the dimension lists
 * allowed values, the value (each item of a list, read as text) must be one of them. A required
 * dimension must be present: a value left empty (null, blank text, an empty list) counts as
 * absent.
 *
 * `agent-help` is the operator's own consulting: anyone but the operator may offer on it (a
 * `can` listing) only help given locally in one metro area, with `delivery: local-only` and a
 * non-empty `metro`. Asking for help (a `need` listing) is open to everyone: those are the
 * consulting's customers.
 */
export function listingProblems(
  listing: ListingInput,
  convention: Pick<ConventionDefinition, 'name' | 'dimensions'> | null,
  options: { isOperator: boolean },
): Problem[] {
  const problems: Problem[] = [];
  const add = (field: string, problem: string) => problems.push({ field, problem });

  for (const field of ['name', 'description'] as const) {
    const problem = requiredText(listing[field], LISTING_LIMITS[field]);
    if (problem) add(field, problem);
  }
  for (const field of ['need', 'can'] as const) {
    const value = listing[field];
    const problem =
      listing.kind === field
        ? requiredText(value, LISTING_LIMITS[field])
        : optionalText(value, LISTING_LIMITS[field]);
    if (problem)
      add(field, listing.kind === field ? `${problem}: a ${field} listing says it here` : problem);
  }
  const contactProblem = optionalText(listing.contact, LISTING_LIMITS.contact);
  if (contactProblem) add('contact', contactProblem);

  const given = Object.entries(listing.dimensions ?? {});
  if (convention === null) {
    if (given.length > 0) add('dimensions', 'no convention: dimensions need one');
    return problems;
  }

  const byKey = new Map(convention.dimensions.map((dimension) => [dimension.key, dimension]));
  const known = convention.dimensions.map((dimension) => dimension.key).join(', ');
  for (const [key, value] of given) {
    const field = `dimensions.${key}`;
    const dimension = byKey.get(key);
    if (!dimension) {
      add(field, `not a dimension of '${convention.name}'; its dimensions are ${known}`);
      continue;
    }
    if (isEmpty(value)) continue;
    const problem = dimensionValueProblem(value, dimension.values);
    if (problem) add(field, problem);
  }

  for (const dimension of convention.dimensions) {
    if (dimension.required && isEmpty(listing.dimensions?.[dimension.key]))
      add(
        `dimensions.${dimension.key}`,
        `required: '${convention.name}' cannot match a listing without it (${dimension.label})`,
      );
  }

  if (convention.name === RESERVED_CONVENTION && listing.kind === 'can' && !options.isOperator) {
    const reason = `'${RESERVED_CONVENTION}' is the operator's own consulting; anyone else may offer only local-only help tied to one metro area`;
    const { delivery, metro } = listing.dimensions ?? {};
    if (delivery !== 'local-only') add('dimensions.delivery', `${reason}: set it to local-only`);
    if (typeof metro !== 'string' || metro.trim() === '')
      add('dimensions.metro', `${reason}: name the metro area here, e.g. Berlin`);
  }
  return problems;
}

function isEmpty(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    (typeof value === 'string' && value.trim() === '') ||
    (Array.isArray(value) && value.length === 0)
  );
}

function dimensionValueProblem(
  value: unknown,
  allowed: readonly string[] | undefined,
): string | null {
  const items = Array.isArray(value) ? value : [value];
  if (Array.isArray(value) && value.length > LISTING_LIMITS.dimensionListItems)
    return `has ${value.length} items; a list holds at most ${LISTING_LIMITS.dimensionListItems}`;
  for (const [index, item] of items.entries()) {
    const where = Array.isArray(value) ? `item ${index} ` : '';
    const scalar =
      typeof item === 'string' ||
      typeof item === 'boolean' ||
      (typeof item === 'number' && Number.isFinite(item));
    if (!scalar)
      return `${where}must be text, a number or true/false${Array.isArray(value) ? '' : ', or a list of those'}`;
    if (typeof item === 'string') {
      const tooLong = textTooLong(item, LISTING_LIMITS.dimensionValue);
      if (tooLong) return `${where}${tooLong}`;
    }
    if (allowed && !allowed.includes(String(item)))
      return `${where}'${String(item)}' is not one of the allowed values: ${allowed.join(', ')}`;
  }
  return null;
}
