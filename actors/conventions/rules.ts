/**
 * The shape a proposed convention must have before the store keeps it: its name, description
 * and dimensions, within their limits. A pure function of its input: the handler that calls it
 * turns the problems into one `convention_invalid` answer. Whether the proposal is close to the
 * reserved convention (reserved-name.ts) or to an existing one (near-duplicate.ts), and whether
 * it holds a denied term (deny-list.ts), are checked by their own rules.
 */
import { TRUNK_FIELDS, type ConventionDimension } from '../../protocol/conventions/known.ts';
import { requiredText, type Problem } from './problems.ts';

/**
 * The limits on a proposed convention: the length of its name (lowercase words joined by single
 * hyphens, `CONVENTION_NAME_PATTERN`) and description, how many dimensions it has (5 to 9), the
 * length of each dimension's label and description, and how many allowed values a closed choice
 * may list and how long each may be.
 */
const CONVENTION_LIMITS = {
  name: 64,
  description: 2000,
  minDimensions: 5,
  maxDimensions: 9,
  label: 80,
  dimensionDescription: 1000,
  values: 50,
  valueLength: 100,
} as const;

/** A convention's name: lowercase letters and digits, words joined by single hyphens, e.g. `pet-care`. */
const CONVENTION_NAME_PATTERN = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** A dimension's key, the YAML header key: snake_case of at most 40 characters, e.g. `task_type`. */
const DIMENSION_KEY_PATTERN = /^[a-z][a-z0-9_]{0,39}$/;

/**
 * Keys no dimension may take: the trunk fields every listing already has, and `convention` and
 * `kind`, which say which convention a listing follows and whether it is a need or a can.
 */
const FORBIDDEN_DIMENSION_KEYS: readonly string[] = [...TRUNK_FIELDS, 'convention', 'kind'];

/**
 * What is wrong with a proposed convention, or nothing. The name is lowercase words joined by
 * single hyphens (`CONVENTION_NAME_PATTERN`), at most 64 characters; the description is not
 * empty and at most 2,000 characters. It has 5 to 9 dimensions. Each dimension has a key in
 * snake_case of at most 40 characters (`DIMENSION_KEY_PATTERN`), unique within the convention and
 * none of the trunk fields (`name`, `description`, `need`, `can`, `contact`) nor `convention` or
 * `kind`; a label of 1 to 80 characters; a description of 1 to 1,000 characters; an axis, if
 * any, of `place` or `price`; allowed values, if any, as a list of 1 to 50 different non-empty
 * strings of at most 100 characters each; and `required`, if given, true or false.
 */
export function conventionProblems(proposal: {
  name: string;
  description: string;
  dimensions: ConventionDimension[];
}): Problem[] {
  const problems: Problem[] = [];
  const add = (field: string, problem: string) => problems.push({ field, problem });

  const nameProblem = requiredText(proposal.name, CONVENTION_LIMITS.name);
  if (nameProblem) add('name', nameProblem);
  else if (!CONVENTION_NAME_PATTERN.test(proposal.name))
    add('name', 'must be lowercase letters and digits, words joined by single hyphens (pet-care)');

  const descriptionProblem = requiredText(proposal.description, CONVENTION_LIMITS.description);
  if (descriptionProblem) add('description', descriptionProblem);

  const dimensions: unknown[] = Array.isArray(proposal.dimensions) ? proposal.dimensions : [];
  if (!Array.isArray(proposal.dimensions)) add('dimensions', 'must be a list of dimensions');
  else if (
    dimensions.length < CONVENTION_LIMITS.minDimensions ||
    dimensions.length > CONVENTION_LIMITS.maxDimensions
  )
    add(
      'dimensions',
      `has ${dimensions.length}; a convention has ${CONVENTION_LIMITS.minDimensions} to ${CONVENTION_LIMITS.maxDimensions} dimensions`,
    );

  const firstIndexOfKey = new Map<string, number>();
  dimensions.forEach((dimension, index) => {
    const at = `dimensions[${index}]`;
    if (typeof dimension !== 'object' || dimension === null || Array.isArray(dimension)) {
      add(at, 'must be an object with key, label and description');
      return;
    }
    const { key, label, description, axis, values, required } = dimension as Record<
      string,
      unknown
    >;

    if (typeof key !== 'string' || !DIMENSION_KEY_PATTERN.test(key))
      add(
        `${at}.key`,
        'must be snake_case: a lowercase letter, then up to 39 lowercase letters, digits or underscores',
      );
    else if (FORBIDDEN_DIMENSION_KEYS.includes(key))
      add(
        `${at}.key`,
        `'${key}' is taken: every listing already has ${FORBIDDEN_DIMENSION_KEYS.join(', ')}`,
      );
    else if (firstIndexOfKey.has(key))
      add(`${at}.key`, `'${key}' is already the key of dimensions[${firstIndexOfKey.get(key)}]`);
    else firstIndexOfKey.set(key, index);

    const labelProblem = requiredText(label, CONVENTION_LIMITS.label);
    if (labelProblem) add(`${at}.label`, labelProblem);
    const dimensionDescriptionProblem = requiredText(
      description,
      CONVENTION_LIMITS.dimensionDescription,
    );
    if (dimensionDescriptionProblem) add(`${at}.description`, dimensionDescriptionProblem);

    if (axis !== undefined && axis !== 'place' && axis !== 'price')
      add(`${at}.axis`, "must be 'place' or 'price', or left out");

    if (values !== undefined) {
      for (const problem of allowedValuesProblems(values)) add(`${at}.values`, problem);
    }

    if (required !== undefined && typeof required !== 'boolean')
      add(`${at}.required`, 'must be true or false, or left out');
  });

  return problems;
}

function allowedValuesProblems(values: unknown): string[] {
  if (!Array.isArray(values)) return ['must be a list of strings, or left out'];
  if (values.length < 1 || values.length > CONVENTION_LIMITS.values)
    return [
      `has ${values.length}; a closed choice lists 1 to ${CONVENTION_LIMITS.values} values (leave it out for free text)`,
    ];
  const problems: string[] = [];
  const seen = new Set<string>();
  values.forEach((value: unknown, index) => {
    const problem = requiredText(value, CONVENTION_LIMITS.valueLength);
    if (problem) problems.push(`item ${index} ${problem}`);
    else if (seen.has(value as string)) problems.push(`'${value as string}' is listed twice`);
    else seen.add(value as string);
  });
  return problems;
}
