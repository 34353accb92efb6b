import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { deniedTerms } from '../../actors/conventions/deny-list.ts';
import { listingProblems, type ListingInput } from '../../actors/conventions/listing-problems.ts';
import { nearDuplicate } from '../../actors/conventions/near-duplicate.ts';
import type { Problem } from '../../actors/conventions/problems.ts';
import { reservedCloseness } from '../../actors/conventions/reserved-name.ts';
import { conventionProblems } from '../../actors/conventions/rules.ts';
import {
  KNOWN_CONVENTIONS,
  TRUNK_FIELDS,
  type ConventionDefinition,
  type ConventionDimension,
} from '../../protocol/conventions/known.ts';

const test = suite('the rules for conventions and listings');

function known(name: string): ConventionDefinition {
  const convention = KNOWN_CONVENTIONS.find((candidate) => candidate.name === name);
  if (!convention) throw new Error(`no built-in convention ${name}`);
  return convention;
}

function dimension(key: string, extra: Partial<ConventionDimension> = {}): ConventionDimension {
  return { key, label: `Label of ${key}`, description: `What goes in ${key}.`, ...extra };
}

function dimensions(count: number): ConventionDimension[] {
  return Array.from({ length: count }, (_, index) => dimension(`field_${index}`));
}

const validProposal = {
  name: 'pet-care',
  description: 'Looking after pets while their people are away: walks, feeding, boarding.',
  dimensions: dimensions(6),
};

/** The proposal with dimension 0 changed. */
function withFirstDimension(change: Partial<ConventionDimension>) {
  const [first, ...rest] = validProposal.dimensions;
  return { ...validProposal, dimensions: [{ ...first!, ...change }, ...rest] };
}

function fields(problems: readonly Problem[]): string[] {
  return problems.map((problem) => problem.field);
}

function assertProblem(
  problems: readonly Problem[],
  field: string,
  says: string,
  what: string,
): void {
  const found = problems.find(
    (problem) => problem.field === field && problem.problem.includes(says),
  );
  assert.ok(
    found,
    `${what}: expected a problem on ${field} saying "${says}", got ${JSON.stringify(problems)}`,
  );
}

test('a well-formed proposal with 5, 6 or 9 dimensions has no problems', () => {
  for (const count of [5, 6, 9]) {
    assert.equal(conventionProblems({ ...validProposal, dimensions: dimensions(count) }), []);
  }
});

test('every built-in convention passes the rules it asks of new ones', () => {
  for (const convention of KNOWN_CONVENTIONS) {
    const problems = conventionProblems({
      name: convention.name,
      description: convention.description,
      dimensions: [...convention.dimensions],
    });
    assert.equal(problems, [], convention.name);
  }
});

/** [what is wrong, the proposal, the field named, words the problem says] */
const badProposals: Array<[string, Parameters<typeof conventionProblems>[0], string, string]> = [
  ['4 dimensions', { ...validProposal, dimensions: dimensions(4) }, 'dimensions', '5 to 9'],
  ['10 dimensions', { ...validProposal, dimensions: dimensions(10) }, 'dimensions', '5 to 9'],
  ['no dimensions', { ...validProposal, dimensions: [] }, 'dimensions', 'has 0'],
  ['an uppercase name', { ...validProposal, name: 'Pet-care' }, 'name', 'lowercase'],
  ['a name with a double hyphen', { ...validProposal, name: 'pet--care' }, 'name', 'hyphens'],
  ['a name ending in a hyphen', { ...validProposal, name: 'pet-care-' }, 'name', 'hyphens'],
  ['a name starting with a digit', { ...validProposal, name: '9lives' }, 'name', 'lowercase'],
  ['a name with an underscore', { ...validProposal, name: 'pet_care' }, 'name', 'hyphens'],
  ['a name of 65 characters', { ...validProposal, name: 'a'.repeat(65) }, 'name', 'limit is 64'],
  ['an empty name', { ...validProposal, name: '' }, 'name', 'must not be empty'],
  ['an empty description', { ...validProposal, description: '  ' }, 'description', 'empty'],
  [
    'a description of 2001 characters',
    { ...validProposal, description: 'd'.repeat(2001) },
    'description',
    'limit is 2000',
  ],
  ['an uppercase key', withFirstDimension({ key: 'Task' }), 'dimensions[0].key', 'snake_case'],
  ['a key with a hyphen', withFirstDimension({ key: 'task-type' }), 'dimensions[0].key', 'snake'],
  ['a key starting with a digit', withFirstDimension({ key: '1st' }), 'dimensions[0].key', 'snake'],
  ['a key starting with _', withFirstDimension({ key: '_task' }), 'dimensions[0].key', 'snake'],
  ['an empty key', withFirstDimension({ key: '' }), 'dimensions[0].key', 'snake_case'],
  [
    'a key of 41 characters',
    withFirstDimension({ key: 'k'.repeat(41) }),
    'dimensions[0].key',
    'snake',
  ],
  ...[...TRUNK_FIELDS, 'convention', 'kind'].map(
    (key): [string, Parameters<typeof conventionProblems>[0], string, string] => [
      `the reserved key ${key}`,
      withFirstDimension({ key }),
      'dimensions[0].key',
      'is taken',
    ],
  ),
  [
    'a key used twice',
    { ...validProposal, dimensions: [...dimensions(5), dimension('field_2')] },
    'dimensions[5].key',
    'already the key of dimensions[2]',
  ],
  ['an empty label', withFirstDimension({ label: '' }), 'dimensions[0].label', 'empty'],
  [
    'a label of 81 characters',
    withFirstDimension({ label: 'l'.repeat(81) }),
    'dimensions[0].label',
    'limit is 80',
  ],
  [
    'an empty dimension description',
    withFirstDimension({ description: '' }),
    'dimensions[0].description',
    'empty',
  ],
  [
    'a dimension description of 1001 characters',
    withFirstDimension({ description: 'd'.repeat(1001) }),
    'dimensions[0].description',
    'limit is 1000',
  ],
  [
    'an axis other than place or price',
    withFirstDimension({ axis: 'time' as unknown as 'place' }),
    'dimensions[0].axis',
    "'place' or 'price'",
  ],
  [
    'an empty list of values',
    withFirstDimension({ values: [] }),
    'dimensions[0].values',
    '1 to 50',
  ],
  [
    '51 values',
    withFirstDimension({ values: Array.from({ length: 51 }, (_, index) => `v${index}`) }),
    'dimensions[0].values',
    '1 to 50',
  ],
  [
    'a value listed twice',
    withFirstDimension({ values: ['a', 'b', 'a'] }),
    'dimensions[0].values',
    "'a' is listed twice",
  ],
  ['an empty value', withFirstDimension({ values: ['a', ''] }), 'dimensions[0].values', 'item 1'],
  [
    'a value of 101 characters',
    withFirstDimension({ values: ['v'.repeat(101)] }),
    'dimensions[0].values',
    'limit is 100',
  ],
  [
    'required given as text',
    withFirstDimension({ required: 'yes' as unknown as boolean }),
    'dimensions[0].required',
    'true or false',
  ],
];

test('a proposal that breaks a rule is refused on the field it breaks', () => {
  for (const [what, proposal, field, says] of badProposals) {
    assertProblem(conventionProblems(proposal), field, says, what);
  }
});

test('a key of exactly 40 characters and a value of exactly 100 are accepted', () => {
  const proposal = withFirstDimension({ key: 'k'.repeat(40), values: ['v'.repeat(100)] });
  assert.equal(conventionProblems(proposal), []);
});

const reservedNames = [
  'agent-help',
  'agent-helps',
  'ai-consulting',
  'ai-help',
  'agent-setup',
  'bot-support',
  'llm-advisory',
  'agenthelp',
  'agent_help',
  'helping-agents',
  'a-gent-help',
  'agnt-halp',
  'agentz-help',
  'aihelp',
  'helpbot',
  'chatbot-configuration',
  'gpt-setups',
  'agents-debugged',
  'claude-onboarding',
  'assistant-tutoring',
  'ai-consultants',
  'bot-set-up',
];

const reservedDescriptions = [
  'We help you set up and debug your own AI agent',
  known('agent-help').description,
  "Consulting for your company's LLM assistant.",
  'Setting up my own agent, step by step.',
  'Onboarding and configuration of their GPT bots.',
  'Your chatbot keeps failing? We fix it.',
  'Troubleshooting for your own AI assistant, remote or on site.',
  'We debug your own AI agent, which belongs on agent-help anyway.',
];

test('names close to agent-help are refused with the reason', () => {
  for (const name of reservedNames) {
    const reason = reservedCloseness({ name, description: 'Something else entirely.' });
    assert.ok(reason, `${name} should be reserved`);
    assert.match(reason, `'${name}' is close to the reserved convention 'agent-help'`);
  }
});

test('descriptions of help with the reader own agent are refused, quoting the words', () => {
  for (const description of reservedDescriptions) {
    const reason = reservedCloseness({ name: 'harmless-name', description });
    assert.ok(reason, `"${description}" should be reserved`);
    assert.match(reason, "its description offers help with the reader's own agent");
  }
  assert.match(
    reservedCloseness({ name: 'harmless-name', description: reservedDescriptions[0]! }) ?? '',
    '"debug your own ai agent"',
  );
});

// help-desk-software is allowed: help desks are software for human support teams, and the name
// holds no agent word; it is 10+ edits from agenthelp.
const innocentNames = [
  'agent-services',
  'agent-tools',
  'translation',
  'dog-walking',
  'ai-art-prints',
  'website-build',
  'help-desk-software',
  'local-services',
  'legal-services',
  'car-repair',
  'chatbot-templates',
  'ai-news-digest',
  'management-consulting',
  'ai-training-data',
  'bike-setup',
];

const innocentDescriptions = [
  known('agent-services').description,
  known('agent-tools').description,
  known('local-services').description,
  known('website-build').description,
  known('legal-services').description,
  'Work done by AI agents: translation, coding, research.',
  'APIs and MCP servers that agents call.',
  'An AI agent that helps you with your emails.',
  'Our AI agent helps you translate contracts.',
  'An agent that fixes bugs in your code.',
  'Customer support for your bakery, answered by people.',
  'Your mail handled by support agents, people on weekdays.',
];

test('names and descriptions that only mention agents or only help are allowed', () => {
  for (const name of innocentNames) {
    assert.is(reservedCloseness({ name, description: 'Plain words.' }), null, name);
  }
  for (const description of innocentDescriptions) {
    assert.is(reservedCloseness({ name: 'harmless-name', description }), null, description);
  }
});

test('a clause pointing readers to agent-help is not an offer, but the same words alone are', () => {
  const pointer = 'Help with setting up or fixing your own agent belongs on `agent-help`.';
  assert.is(reservedCloseness({ name: 'harmless-name', description: pointer }), null);
  const offer = 'Help with setting up or fixing your own agent.';
  assert.ok(reservedCloseness({ name: 'harmless-name', description: offer }));
});

/** [what it is, the proposal, the built-in it duplicates, words of the reason] */
const duplicates: Array<[string, Parameters<typeof nearDuplicate>[0], string, string]> = [
  [
    'the same name with underscores',
    { name: 'local_services', description: 'x', dimensions: dimensions(5) },
    'local-services',
    'separators ignored',
  ],
  [
    'the name without its hyphen',
    { name: 'localservices', description: 'x', dimensions: dimensions(5) },
    'local-services',
    'separators ignored',
  ],
  [
    'the name in the singular',
    { name: 'local-service', description: 'x', dimensions: dimensions(5) },
    'local-services',
    '1 edit',
  ],
  [
    'the name misspelt twice',
    { name: 'webside-bild', description: 'x', dimensions: dimensions(5) },
    'website-build',
    '2 edits',
  ],
  [
    'the name words in another order',
    { name: 'services-local', description: 'x', dimensions: dimensions(5) },
    'local-services',
    'another order',
  ],
  [
    'the name words in another order and the singular',
    { name: 'tool-agent', description: 'x', dimensions: dimensions(5) },
    'agent-tools',
    'another order',
  ],
  [
    "website-build's dimensions under another name",
    { name: 'site-making', description: 'x', dimensions: [...known('website-build').dimensions] },
    'website-build',
    '100% (7 shared of 7)',
  ],
];

test('a near-duplicate of a built-in convention is refused, naming it', () => {
  for (const [what, proposal, name, says] of duplicates) {
    const found = nearDuplicate(proposal, KNOWN_CONVENTIONS);
    assert.is(found?.name, name, what);
    assert.match(found?.reason ?? '', says, what);
  }
});

/** [what it is, the proposal, the conventions it is compared with] */
const distinct: Array<[string, Parameters<typeof nearDuplicate>[0], typeof KNOWN_CONVENTIONS]> = [
  ['a convention of its own', validProposal, KNOWN_CONVENTIONS],
  [
    "legal-services' keys but one, plus one of its own (6 shared of 8: 75%)",
    {
      name: 'lawyers',
      description: 'x',
      dimensions: [...known('legal-services').dimensions.slice(0, 6), dimension('bar_number')],
    },
    KNOWN_CONVENTIONS,
  ],
  [
    'a name 3 edits from a built-in',
    { name: 'agent-jobs', description: 'x', dimensions: dimensions(5) },
    KNOWN_CONVENTIONS,
  ],
  [
    'a short name 1 edit from another short one',
    { name: 'pets', description: 'x', dimensions: dimensions(5) },
    [{ ...validProposal, name: 'bets', placement: ['root'], dimensions: [] }],
  ],
];

test('a distinct convention is allowed, including a key overlap under 80%', () => {
  for (const [what, proposal, existing] of distinct) {
    assert.is(nearDuplicate(proposal, existing), null, what);
  }
});

/** [deny-list, texts, terms found] */
const denials: Array<[string[], string[], string[]]> = [
  [['scam'], ['a scam offer'], ['scam']],
  [['scam'], ['scampi with chips'], []],
  [['scam'], ['no scams here'], []],
  [['scam'], ['Total SCAM!'], ['scam']],
  [['scam'], ['(scam)'], ['scam']],
  [['Scam'], ['a scam offer'], ['Scam']],
  [['scam'], ['a s\u200bcam offer'], ['scam']],
  [['café'], ['the cafe round the corner'], ['café']],
  [['get rich quick'], ['get-rich-quick schemes'], ['get rich quick']],
  [['get rich quick'], ['get rich later, quick'], []],
  [
    ['weapons', 'scam', 'drugs'],
    ['no weapons', 'a scam'],
    ['weapons', 'scam'],
  ],
  [['scam', 'scam'], ['scam'], ['scam']],
  [['', '  '], ['anything'], []],
  [['c++'], ['we write c++ daily'], ['c++']],
  [['a.b'], ['axb'], []],
];

test('deny-list terms match whole words and phrases, ignoring case and accents', () => {
  for (const [denyList, texts, found] of denials) {
    assert.equal(deniedTerms(denyList, texts), found, `${denyList.join('|')} in ${texts}`);
  }
});

/** The listing a convention's required dimensions make, with a plausible value for each. */
function validListing(
  convention: ConventionDefinition,
  kind: 'need' | 'can' = 'can',
): ListingInput {
  const values: Record<string, unknown> = {};
  for (const dimension of convention.dimensions.filter((candidate) => candidate.required)) {
    values[dimension.key] = dimension.values?.[0] ?? `a ${dimension.label.toLowerCase()}`;
  }
  return {
    kind,
    name: `A listing on ${convention.name}`,
    description: 'What it is about, in a sentence.',
    [kind]: 'What the listing needs or can do.',
    dimensions: values,
  };
}

test('a listing built from the required dimensions of each built-in has no problems', () => {
  for (const convention of KNOWN_CONVENTIONS) {
    for (const kind of ['need', 'can'] as const) {
      const listing = validListing(convention, kind);
      assert.equal(listingProblems(listing, convention, { isOperator: true }), [], convention.name);
      if (convention.name === 'agent-help') continue;
      assert.equal(listingProblems(listing, convention, { isOperator: false }), []);
    }
  }
});

test('a listing on the trunk alone, without dimensions, has no problems', () => {
  const listing: ListingInput = {
    kind: 'need',
    name: 'A dog sitter',
    description: 'For a week in May.',
    need: 'Someone to look after a dog.',
    contact: 'knock',
    dimensions: {},
  };
  assert.equal(listingProblems(listing, null, { isOperator: false }), []);
});

const localServices = known('local-services');
const base = validListing(localServices);

/** [what is wrong, the listing, its convention, the field named, words the problem says] */
const badListings: Array<[string, ListingInput, ConventionDefinition | null, string, string]> = [
  ['a missing name', { ...base, name: undefined }, localServices, 'name', 'required'],
  ['a blank name', { ...base, name: '   ' }, localServices, 'name', 'must not be empty'],
  ['a name that is a number', { ...base, name: 42 }, localServices, 'name', 'must be a string'],
  [
    'a name of 201 characters',
    { ...base, name: 'n'.repeat(201) },
    localServices,
    'name',
    'limit is 200',
  ],
  [
    'a missing description',
    { ...base, description: undefined },
    localServices,
    'description',
    'required',
  ],
  [
    'a description of 4001 characters',
    { ...base, description: 'd'.repeat(4001) },
    localServices,
    'description',
    'limit is 4000',
  ],
  [
    'a need listing without need',
    { ...base, kind: 'need', can: 'whatever', need: undefined },
    localServices,
    'need',
    'required: a need listing says it here',
  ],
  [
    'a can listing without can',
    { ...base, kind: 'can', can: undefined },
    localServices,
    'can',
    'required: a can listing says it here',
  ],
  [
    'a can of 4001 characters',
    { ...base, can: 'c'.repeat(4001) },
    localServices,
    'can',
    'limit is 4000',
  ],
  [
    'an optional need that is no string',
    { ...base, need: ['x'] },
    localServices,
    'need',
    'must be a string',
  ],
  [
    'a contact of 501 characters',
    { ...base, contact: 'c'.repeat(501) },
    localServices,
    'contact',
    'limit is 500',
  ],
  [
    'an unknown dimension',
    { ...base, dimensions: { ...base.dimensions, colour: 'red' } },
    localServices,
    'dimensions.colour',
    "not a dimension of 'local-services'; its dimensions are service, location",
  ],
  [
    'a value outside the allowed values',
    { ...base, dimensions: { ...base.dimensions, insured: 'maybe' } },
    localServices,
    'dimensions.insured',
    "'maybe' is not one of the allowed values: yes, no",
  ],
  [
    'true where the allowed values are yes and no',
    { ...base, dimensions: { ...base.dimensions, insured: true } },
    localServices,
    'dimensions.insured',
    "'true' is not one of",
  ],
  [
    'a list with a bad item',
    {
      ...validListing(known('agent-services')),
      dimensions: { task_type: 'review', interface: ['mcp', 'carrier-pigeon'] },
    },
    known('agent-services'),
    'dimensions.interface',
    "item 1 'carrier-pigeon' is not one of the allowed values",
  ],
  [
    'a list of 21 items',
    { ...base, dimensions: { ...base.dimensions, languages: Array(21).fill('German') } },
    localServices,
    'dimensions.languages',
    'at most 20',
  ],
  [
    'a list holding an object',
    { ...base, dimensions: { ...base.dimensions, languages: ['German', { lang: 'en' }] } },
    localServices,
    'dimensions.languages',
    'item 1 must be text, a number or true/false',
  ],
  [
    'an object value',
    { ...base, dimensions: { ...base.dimensions, rate: { amount: 40 } } },
    localServices,
    'dimensions.rate',
    'or a list of those',
  ],
  [
    'a value of 501 characters',
    { ...base, dimensions: { ...base.dimensions, availability: 'a'.repeat(501) } },
    localServices,
    'dimensions.availability',
    'limit is 500',
  ],
  [
    'a required dimension missing',
    { ...base, dimensions: { service: 'bicycle repair' } },
    localServices,
    'dimensions.location',
    'required',
  ],
  [
    'a required dimension left blank',
    { ...base, dimensions: { service: 'bicycle repair', location: ' ' } },
    localServices,
    'dimensions.location',
    'required',
  ],
  [
    'dimensions on the trunk alone',
    { ...base, dimensions: { location: 'Berlin' } },
    null,
    'dimensions',
    'no convention: dimensions need one',
  ],
];

test('a listing that breaks a rule is refused on the field it breaks', () => {
  for (const [what, listing, convention, field, says] of badListings) {
    assertProblem(listingProblems(listing, convention, { isOperator: false }), field, says, what);
  }
});

test('a listing with a list value of allowed items and numbers is accepted', () => {
  const agentServices = known('agent-services');
  const listing = {
    ...validListing(agentServices),
    dimensions: { task_type: 'review', interface: ['mcp', 'email'], turnaround: 24 },
  };
  assert.equal(listingProblems(listing, agentServices, { isOperator: false }), []);
});

const agentHelp = known('agent-help');

/** [who and what, the dimensions, operator?, the fields refused] */
const agentHelpListings: Array<[string, Record<string, unknown>, boolean, string[]]> = [
  [
    'a non-operator offering remote help',
    { topic: 'setup', delivery: 'remote' },
    false,
    ['dimensions.delivery', 'dimensions.metro'],
  ],
  [
    'a non-operator offering in-person help in a metro',
    { topic: 'setup', delivery: 'in-person', metro: 'Berlin' },
    false,
    ['dimensions.delivery'],
  ],
  [
    'a non-operator offering local-only help without a metro',
    { topic: 'setup', delivery: 'local-only' },
    false,
    ['dimensions.metro'],
  ],
  [
    'a non-operator offering local-only help with a blank metro',
    { topic: 'setup', delivery: 'local-only', metro: ' ' },
    false,
    ['dimensions.metro'],
  ],
  [
    'a non-operator offering local-only help in Berlin',
    { topic: 'debugging', delivery: 'local-only', metro: 'Berlin' },
    false,
    [],
  ],
  ['the operator offering remote help', { topic: 'setup', delivery: 'remote' }, true, []],
];

test('agent-help takes remote help only from the operator, and local-only help in a metro from anyone', () => {
  for (const [what, dims, isOperator, refused] of agentHelpListings) {
    const listing = { ...validListing(agentHelp), dimensions: dims };
    const problems = listingProblems(listing, agentHelp, { isOperator });
    assert.equal(fields(problems), refused, what);
    for (const problem of problems) {
      assert.match(problem.problem, "'agent-help' is the operator's own consulting", what);
      assert.match(problem.problem, 'local-only help tied to one metro area', what);
    }
  }
});

test('anyone may ask for remote help on agent-help: a need listing is the consulting’s customer', () => {
  const listing = {
    ...validListing(agentHelp, 'need'),
    dimensions: { topic: 'setup', delivery: 'remote' },
  };
  assert.equal(listingProblems(listing, agentHelp, { isOperator: false }), []);
});

test.run();
