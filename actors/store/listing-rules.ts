import { ServiceError } from '../../protocol/errors.ts';
import { TRUNK_FIELDS } from '../../protocol/conventions/known.ts';
import type { Queryable } from '../../storage/driver.ts';
import { findConvention } from '../../storage/conventions/conventions.ts';
import { listingProblems } from '../conventions/listing-problems.ts';
import type { Problem } from '../conventions/problems.ts';
import type { IndexEntry } from '../index/capture.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { refuseDeniedTerms } from './deny-terms.ts';

/**
 * What the store takes as a listing: a header of kind `need` or `can`, on a convention that is
 * registered and not refused (or on the trunk alone), that the convention's rules and the
 * operator's deny-list let through. The same check runs on every save of a listing's file.
 */

/** Header keys that are not dimensions. */
const NOT_DIMENSIONS = new Set<string>([...TRUNK_FIELDS, 'kind', 'convention']);

/** Dimension keys a listing may not use: they are the trunk's, or say what the file is. */
export function trunkClashes(dimensions: Record<string, unknown> | undefined): Problem[] {
  return Object.keys(dimensions ?? {})
    .filter((key) => NOT_DIMENSIONS.has(key))
    .map((key) => ({
      field: `dimensions.${key}`,
      problem: `${key} is not a dimension: give it at the top level of the listing`,
    }));
}

/** The dimension values of a listing's header: every key but the trunk, kind and convention. */
export function dimensionsOf(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([key]) => !NOT_DIMENSIONS.has(key)));
}

export function invalid(problems: Problem[]): ServiceError {
  return new ServiceError(
    'listing_invalid',
    problems.map((p) => `${p.field}: ${p.problem}`).join('; '),
    { problems },
  );
}

/**
 * Checks a listing's header against its convention (read in `tx`), the reserved rule and the
 * operator's deny-list; throws `listing_invalid` or `content_refused`. Answers the kind and
 * convention.
 */
export async function checkListing(
  tx: Queryable,
  services: Services,
  principal: Principal,
  index: IndexEntry | null | undefined,
): Promise<{ kind: 'need' | 'can'; convention: string | null; fields: Record<string, unknown> }> {
  if (!index) {
    throw invalid([
      { field: 'header', problem: 'a listing is markdown that starts with a YAML header' },
    ]);
  }
  if ('error' in index) throw invalid([{ field: 'header', problem: index.error }]);
  const { fields } = index;
  const kind = fields.kind;
  if (kind !== 'need' && kind !== 'can') {
    throw invalid([{ field: 'kind', problem: 'must be `need` or `can`' }]);
  }
  const name = typeof fields.convention === 'string' ? fields.convention : null;
  if (fields.convention !== undefined && name === null) {
    throw invalid([{ field: 'convention', problem: 'must be the name of a convention' }]);
  }
  let convention = null;
  if (name !== null) {
    convention = await findConvention(tx, name);
    if (!convention) {
      throw invalid([
        {
          field: 'convention',
          problem: `no convention is named "${name}": see GET /conventions, or leave it out to list on the trunk alone`,
        },
      ]);
    }
    if (convention.status === 'refused') {
      throw invalid([
        { field: 'convention', problem: `the operators refused "${name}": pick another` },
      ]);
    }
  }
  const problems = listingProblems(
    {
      kind,
      name: fields.name,
      description: fields.description,
      need: fields.need,
      can: fields.can,
      contact: fields.contact,
      dimensions: dimensionsOf(fields),
    },
    convention,
    { isOperator: principal.isOperator },
  );
  if (problems.length > 0) throw invalid(problems);
  refuseDeniedTerms(services.config.storeDenyTerms ?? [], fields);
  return { kind, convention: name, fields };
}
