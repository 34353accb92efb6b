/**
 * How the rules name what is wrong with an input, and the text checks they share: the convention
 * rules (rules.ts) and the listing rules (listing-problems.ts) both answer a list of problems,
 * which their callers turn into one refusal naming every field.
 */

/** One thing wrong with an input: where (`name`, `dimensions[2].key`, `dimensions.location`) and what. */
export interface Problem {
  field: string;
  problem: string;
}

/** 'required', 'must be a string', 'must not be empty' or 'is longer than ...', or null. */
export function requiredText(value: unknown, limit: number): string | null {
  if (value === undefined || value === null) return 'required';
  if (typeof value !== 'string') return 'must be a string';
  if (value.trim() === '') return 'must not be empty';
  return textTooLong(value, limit);
}

/** Nothing when absent; otherwise 'must be a string' or 'is longer than ...', or null. */
export function optionalText(value: unknown, limit: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return 'must be a string';
  return textTooLong(value, limit);
}

/** 'is N characters; the limit is M' when `value` is longer than `limit` characters, or null. */
export function textTooLong(value: string, limit: number): string | null {
  const length = characterCount(value);
  return length > limit ? `is ${length} characters; the limit is ${limit}` : null;
}

/** Characters as people count them (code points), so an emoji is one, not two. */
function characterCount(value: string): number {
  return Array.from(value).length;
}
