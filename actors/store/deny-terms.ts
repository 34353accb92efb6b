import { ServiceError } from '../../protocol/errors.ts';
import { deniedTerms } from '../conventions/deny-list.ts';

/**
 * The operator's deny-list (STORE_DENY_TERMS) on listings: a listing whose header holds one of
 * its terms anywhere (keys aside) is refused with `content_refused`, naming the terms found.
 */
export function refuseDeniedTerms(
  denyList: readonly string[],
  fields: Record<string, unknown>,
): void {
  const denied = deniedTerms(denyList, textsOf(fields));
  if (denied.length > 0) {
    throw new ServiceError(
      'content_refused',
      `The store does not take listings with: ${denied.join(', ')}.`,
      { terms: denied },
    );
  }
}

/** Every string in a header, for the deny-list. */
function textsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(textsOf);
  if (value && typeof value === 'object') return Object.values(value).flatMap(textsOf);
  return [];
}
