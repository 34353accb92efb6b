/**
 * The rules a proposed convention and a listing must pass before the store keeps them: shapes and
 * limits, the reserved `agent-help` convention, near-duplicates of conventions that already
 * exist, and the operator's deny-list. Pure functions of their input: the handlers that call them
 * turn the problems into one `invalid_input` answer.
 */
import {
  TRUNK_FIELDS,
  type ConventionDefinition,
  type ConventionDimension,
} from '../../protocol/known-conventions.ts';
import {
  KEY_OVERLAP,
  NAME_EDIT_DISTANCE,
  NAME_MIN_LENGTH,
  sortedNameWords,
  squashName,
} from '../../storage/convention-keys.ts';

/** One thing wrong with an input: where (`name`, `dimensions[2].key`, `dimensions.location`) and what. */
export interface Problem {
  field: string;
  problem: string;
}

/**
 * The longest a listing's fields may be, in characters: its trunk fields, each dimension value
 * (or each item of a list value), and the number of items a list value may hold.
 */
export const LISTING_LIMITS = {
  name: 200,
  description: 4000,
  need: 4000,
  can: 4000,
  contact: 500,
  dimensionValue: 500,
  dimensionListItems: 20,
} as const;

/**
 * The limits on a proposed convention: the length of its name (lowercase words joined by single
 * hyphens, `CONVENTION_NAME_PATTERN`) and description, how many dimensions it has (5 to 9), the
 * length of each dimension's label and description, and how many allowed values a closed choice
 * may list and how long each may be.
 */
export const CONVENTION_LIMITS = {
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
export const CONVENTION_NAME_PATTERN = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** A dimension's key, the YAML header key: snake_case of at most 40 characters, e.g. `task_type`. */
export const DIMENSION_KEY_PATTERN = /^[a-z][a-z0-9_]{0,39}$/;

/**
 * Keys no dimension may take: the trunk fields every listing already has, and `convention` and
 * `kind`, which say which convention a listing follows and whether it is a need or a can.
 */
export const FORBIDDEN_DIMENSION_KEYS: readonly string[] = [...TRUNK_FIELDS, 'convention', 'kind'];

/**
 * The convention kept for the operator's own consulting: help with one's own agent. Other agents
 * may list on it only help given in person in one metro area, and may not register a convention
 * close to it.
 */
export const RESERVED_CONVENTION = 'agent-help';

/**
 * Words that name an agent, for the similarity rule: any of them counts as "an agent word".
 * Listed in their base form; plurals and other endings are found by the stemming the rule
 * describes.
 */
export const AGENT_WORDS: readonly string[] = [
  'agent',
  'agentic',
  'ai',
  'genai',
  'bot',
  'chatbot',
  'llm',
  'gpt',
  'chatgpt',
  'openai',
  'claude',
  'assistant',
  'copilot',
  'autogpt',
  'langchain',
  'langgraph',
  'crewai',
  'autogen',
];

/**
 * Words that name help with something, for the similarity rule: any of them counts as "a help
 * word". Listed in their base form; `set up` and `set-up` read as `setup`.
 */
export const HELP_WORDS: readonly string[] = [
  'help',
  'helper',
  'consult',
  'consulting',
  'consultant',
  'consultancy',
  'advice',
  'advise',
  'adviser',
  'advisor',
  'advisory',
  'setup',
  'install',
  'installation',
  'configure',
  'configuration',
  'onboard',
  'onboarding',
  'support',
  'coach',
  'coaching',
  'tutor',
  'tutoring',
  'mentor',
  'mentoring',
  'debug',
  'troubleshoot',
  'troubleshooting',
  'fix',
  'repair',
  'integrate',
  'integration',
  'deploy',
  'deployment',
  'implement',
  'implementation',
];

/**
 * Words that make an agent the reader's own, for the similarity rule. `one's` reads as `ones`
 * once apostrophes are dropped. `our` is left out on purpose: "our AI agent translates your
 * contracts" is a provider describing its own agent's work, not help with the reader's.
 */
export const POSSESSIVE_WORDS: readonly string[] = [
  'your',
  'yours',
  'my',
  'mine',
  'own',
  'their',
  'theirs',
  'ones',
];

/** How many tokens the description rule looks at together. */
export const RESERVED_WINDOW = 6;

/** The most edits a name may be from `agenthelp` (separators removed) and still be reserved. */
export const RESERVED_NAME_DISTANCE = 3;

/**
 * The most edits apart two convention names may be and count as near-duplicates. The indexed
 * lookup of candidates (storage/convention-keys.ts) is built for these three numbers.
 */
export const DUPLICATE_NAME_DISTANCE = NAME_EDIT_DISTANCE;

/** Names shorter than this (separators removed) are never compared by edit distance. */
export const DUPLICATE_NAME_MIN_LENGTH = NAME_MIN_LENGTH;

/** The share of dimension keys two conventions may have in common before they count as one. */
export const DUPLICATE_KEY_OVERLAP = KEY_OVERLAP;

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

/** 'required', 'must be a string', 'must not be empty' or 'is longer than ...', or null. */
function requiredText(value: unknown, limit: number): string | null {
  if (value === undefined || value === null) return 'required';
  if (typeof value !== 'string') return 'must be a string';
  if (value.trim() === '') return 'must not be empty';
  return textTooLong(value, limit);
}

function textTooLong(value: string, limit: number): string | null {
  const length = characterCount(value);
  return length > limit ? `is ${length} characters; the limit is ${limit}` : null;
}

/** Characters as people count them (code points), so an emoji is one, not two. */
function characterCount(value: string): number {
  return Array.from(value).length;
}

/**
 * Whether a proposed convention is close to the reserved `agent-help` (help with one's own
 * agent); the reason, for the refusal, or null.
 *
 * Both texts are first normalised: accents and invisible characters are dropped, everything is
 * lowercased, apostrophes are dropped (so `one's` reads `ones`), and the text is split into words
 * at anything that is not a letter or a digit. A word is looked up as written and with one
 * ending stripped: `s`, `es`, `ed` or `ing` (also with an `e` put back or a doubled last letter
 * undone, so `consultants`, `helping`, `configured` and `debugging` are found). Two neighbouring
 * words also count joined, the first one stemmed as above (`set up` and `setting up` read
 * `setup`, `a-gent` reads `agent`), and one word that is an agent word and a help word run
 * together (`aihelp`, `helpbot`) counts as both. Agent words are `AGENT_WORDS`, help words
 * `HELP_WORDS`.
 *
 * The NAME is reserved when (a) its words hold an agent word and a help word (`ai-consulting`,
 * `bot-support`, `helping-agents`), or (b) with its separators removed it is at most 3 edits
 * (Levenshtein) from `agenthelp` (`agent_help`, `agent-helps`, `agnt-halp`).
 *
 * The DESCRIPTION is reserved when some 6 consecutive words hold a help word and an agent word
 * that is the reader's own: one of `POSSESSIVE_WORDS` (`your`, `my`, `own`, `their`, ...) stands
 * among the three words just before it (`your agent`, `your own AI agent`, `their company's
 * chatbot`). The 6 words may run across a sentence end ("Your chatbot keeps failing? We fix
 * it."). So "We help you set up and debug your own AI agent" is reserved, while "work done by
 * AI agents: translation, coding, research", "APIs and MCP servers that agents call" and "an AI
 * agent that helps you with your emails" are not. A sentence or clause (text between `.`, `;`,
 * `!`, `?` or line breaks) that only points elsewhere, ending in "belongs on `agent-help`" (or
 * belong/go/goes, on/in/to/under) and holding no `we`, `I`, `us`, `our`, `me` or `my`, is left out
 * first: saying that such help belongs on `agent-help` is not offering it.
 */
export function reservedCloseness(proposal: { name: string; description: string }): string | null {
  const subject = `'${proposal.name}' is close to the reserved convention '${RESERVED_CONVENTION}' (help with one's own agent, kept for the operator)`;
  const nameWords = words(proposal.name);
  const squashed = nameWords.join('');
  const reservedSquashed = RESERVED_CONVENTION.replace(/-/g, '');

  if (squashed === reservedSquashed) return `${subject}: it is that name.`;
  const nameHits = hits(nameWords);
  const agentHit = nameHits.find((hit) => hit.agent);
  const helpHit = nameHits.find((hit) => hit.help);
  if (agentHit && helpHit)
    return `${subject}: its name pairs an agent word ('${agentHit.agent}') with a help word ('${helpHit.help}').`;
  const distance = levenshtein(squashed, reservedSquashed);
  if (distance <= RESERVED_NAME_DISTANCE)
    return `${subject}: its name is ${distance} edit${distance === 1 ? '' : 's'} from '${reservedSquashed}' once separators are removed.`;

  const phrase = ownAgentHelpPhrase(descriptionWords(proposal.description));
  if (phrase)
    return `${subject}: its description offers help with the reader's own agent ("${phrase}").`;
  return null;
}

interface Hit {
  /** The agent word found at this word (perhaps joined with the next), if any. */
  agent?: string;
  /** The help word found at this word (perhaps joined with the next), if any. */
  help?: string;
}

const agentWordSet = new Set(AGENT_WORDS);
const helpWordSet = new Set(HELP_WORDS);
const possessiveSet = new Set(POSSESSIVE_WORDS);

/** For each word, the agent word and help word it stands for, alone, joined to the next, or split. */
function hits(tokens: readonly string[]): Hit[] {
  return tokens.map((token, index) => {
    const next = tokens[index + 1];
    const candidates =
      next === undefined ? [token] : [token, ...stems(token).map((stem) => stem + next)];
    const hit: Hit = {};
    for (const candidate of candidates) {
      hit.agent ??= lookUp(candidate, agentWordSet);
      hit.help ??= lookUp(candidate, helpWordSet);
    }
    if (!hit.agent || !hit.help) {
      const split = runTogether(token);
      if (split) {
        hit.agent ??= split.agent;
        hit.help ??= split.help;
      }
    }
    return hit;
  });
}

/** The list word `word` is, as written or with one ending stripped, or undefined. */
function lookUp(word: string, list: ReadonlySet<string>): string | undefined {
  return stems(word).find((form) => list.has(form));
}

/** `word`, then what it might be with `s`, `es`, `ed` or `ing` stripped (an `e` put back, a doubled letter undone). */
function stems(word: string): string[] {
  const forms = [word];
  for (const ending of ['ing', 'ed', 'es', 's']) {
    if (!word.endsWith(ending) || word.length - ending.length < 2) continue;
    const stem = word.slice(0, -ending.length);
    forms.push(stem, `${stem}e`);
    if (stem.length >= 3 && stem.at(-1) === stem.at(-2)) forms.push(stem.slice(0, -1));
  }
  return forms;
}

/** An agent word and a help word written as one word (`aihelp`, `helpbot`), or null. */
function runTogether(word: string): { agent: string; help: string } | null {
  for (let cut = 2; cut <= word.length - 2; cut++) {
    const head = word.slice(0, cut);
    const tail = word.slice(cut);
    const agentHead = lookUp(head, agentWordSet);
    const helpTail = lookUp(tail, helpWordSet);
    if (agentHead && helpTail) return { agent: agentHead, help: helpTail };
    const helpHead = lookUp(head, helpWordSet);
    const agentTail = lookUp(tail, agentWordSet);
    if (helpHead && agentTail) return { agent: agentTail, help: helpHead };
  }
  return null;
}

/** Lowercase words of `text`: accents, invisible characters and apostrophes dropped, split at the rest. */
function words(text: string): string[] {
  return normalise(text)
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '');
}

function normalise(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[\u00AD\u200B-\u200D\u2060\uFEFF]/g, '')
    .toLowerCase()
    .replace(/['\u2018\u2019\u02BC]/g, '');
}

const pointingVerbs = new Set(['belong', 'belongs', 'go', 'goes']);
const pointingPrepositions = new Set(['on', 'in', 'to', 'under']);
const firstPerson = new Set(['we', 'i', 'us', 'our', 'me', 'my']);

/** The description's words, without the clauses that only point readers to `agent-help`. */
function descriptionWords(description: string): string[] {
  const reserved = words(RESERVED_CONVENTION);
  return description
    .split(/[.;!?\n\r]+/)
    .map(words)
    .filter((clause) => !pointsToReserved(clause, reserved))
    .flat();
}

function pointsToReserved(clause: readonly string[], reserved: readonly string[]): boolean {
  const tail = clause.slice(-(reserved.length + 2));
  return (
    tail.length === reserved.length + 2 &&
    pointingVerbs.has(tail[0]!) &&
    pointingPrepositions.has(tail[1]!) &&
    tail.slice(2).join(' ') === reserved.join(' ') &&
    !clause.some((word) => firstPerson.has(word))
  );
}

/** The words from possessive to help word (or back), when some window holds all three; else null. */
function ownAgentHelpPhrase(tokens: readonly string[]): string | null {
  const found = hits(tokens);
  const helpAt = found.flatMap((hit, index) => (hit.help ? [index] : []));
  for (let agentAt = 0; agentAt < tokens.length; agentAt++) {
    if (!found[agentAt]!.agent) continue;
    for (let ownerAt = Math.max(0, agentAt - 3); ownerAt < agentAt; ownerAt++) {
      if (!possessiveSet.has(tokens[ownerAt]!)) continue;
      for (const at of helpAt) {
        const start = Math.min(at, ownerAt);
        let end = Math.max(at, agentAt);
        if (end - start >= RESERVED_WINDOW) continue;
        while (end + 1 < tokens.length && found[end + 1]!.agent) end++;
        return tokens.slice(start, end + 1).join(' ');
      }
    }
  }
  return null;
}

/** The number of single-letter insertions, deletions and substitutions that turn `a` into `b`. */
function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

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
 * `existing` may be every convention or only the candidates storage/conventions.ts finds by
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

/**
 * The terms of the operator's deny-list that occur in any of `texts`, each once, in the list's
 * order and spelling. A term matches as whole words, ignoring case and accents: `scam` finds
 * "a scam offer" and "SCAM!" but not "scampi" (nor "scams": list each form you mean). A term of
 * several words matches them in order with any spaces or punctuation between, so `get rich quick`
 * finds "get-rich-quick". Invisible characters inside a word do not hide it. Blank terms are
 * ignored.
 */
export function deniedTerms(denyList: readonly string[], texts: readonly string[]): string[] {
  const haystack = texts.map(normaliseForDenyList);
  const found: string[] = [];
  for (const term of denyList) {
    const parts = normaliseForDenyList(term).split(/\s+/).filter(Boolean);
    if (parts.length === 0 || found.includes(term)) continue;
    const body = parts.map(escapeRegExp).join('[^\\p{L}\\p{N}]+');
    const before = /^[\p{L}\p{N}]/u.test(parts[0]!) ? '(?<![\\p{L}\\p{N}])' : '';
    const after = /[\p{L}\p{N}]$/u.test(parts.at(-1)!) ? '(?![\\p{L}\\p{N}])' : '';
    const pattern = new RegExp(`${before}${body}${after}`, 'u');
    if (haystack.some((text) => pattern.test(text))) found.push(term);
  }
  return found;
}

function normaliseForDenyList(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[\u00AD\u200B-\u200D\u2060\uFEFF]/g, '')
    .toLowerCase();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

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

function optionalText(value: unknown, limit: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return 'must be a string';
  return textTooLong(value, limit);
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
