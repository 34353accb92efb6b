/**
 * The convention kept for the operator (`agent-help`, help with one's own agent), and the rule
 * that refuses proposals close to it, by name or by description. A pure function of its input.
 */
import { levenshtein } from './edit-distance.ts';

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
const AGENT_WORDS: readonly string[] = [
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
const HELP_WORDS: readonly string[] = [
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
const POSSESSIVE_WORDS: readonly string[] = [
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
const RESERVED_WINDOW = 6;

/** The most edits a name may be from `agenthelp` (separators removed) and still be reserved. */
const RESERVED_NAME_DISTANCE = 3;

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
