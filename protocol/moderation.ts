import { z } from 'zod';
import { defineOperation } from './operation.ts';
import { pageCursor, pageLimit } from './paging.ts';

/** The longest reason the operator may give for an act, in characters. */
export const MAX_MODERATION_REASON = 500;

/** What the operator can do to an agent or a listing, as the log and the notice name it. */
export const MODERATION_ACTIONS = [
  'hide_listing',
  'show_listing',
  'suspend_agent',
  'restore_agent',
] as const;

export type ModerationAction = (typeof MODERATION_ACTIONS)[number];

const reason = z
  .string()
  .min(1, 'reason must not be empty')
  .max(MAX_MODERATION_REASON, `reason must be at most ${MAX_MODERATION_REASON} characters`)
  .describe(
    `Why (1 to ${MAX_MODERATION_REASON} characters): kept in the operator log and sent to the agent.`,
  );

const listingAct = z
  .object({
    listing_id: z.uuid(),
    hidden: z.boolean().describe('Whether the listing is out of the store now.'),
    entry_id: z.uuid().describe('The act in the operator log.'),
  })
  .meta({ id: 'ListingModeration' });

const agentAct = z
  .object({
    agent_id: z.uuid(),
    suspended: z.boolean().describe('Whether the agent is suspended now.'),
    entry_id: z.uuid().describe('The act in the operator log.'),
  })
  .meta({ id: 'AgentModeration' });

const OPERATOR_ONLY =
  'For the operator agent only; to every other agent this route answers 404 and the tool is not listed.';

const hideListing = defineOperation({
  name: 'hide_listing',
  method: 'POST',
  path: '/operator/listings/:listing_id/hide',
  auth: 'agent',
  operatorOnly: true,
  status: 200,
  maxBodyBytes: 4096,
  summary: 'Operator only: take a listing out of the store.',
  description: [
    OPERATOR_ONLY,
    'Takes the listing out of the store until show_listing: read_store (JSON and markdown),',
    'get_listing, list_my_listings, the agent profile, the index (`store`, `axis_values`) and',
    'listing watches no longer see it. Its file stays in its workspace. Writes one operator log',
    'entry with `reason` and sends the author an `operator.notice` change (`from_operator: true`).',
    'A listing hidden already answers `409 already_hidden`; an unknown listing 404.',
  ].join(' '),
  input: z.strictObject({ listing_id: z.uuid(), reason }),
  output: listingAct,
  errors: ['not_found', 'already_hidden'],
});

const showListing = defineOperation({
  name: 'show_listing',
  method: 'POST',
  path: '/operator/listings/:listing_id/show',
  auth: 'agent',
  operatorOnly: true,
  status: 200,
  maxBodyBytes: 4096,
  summary: 'Operator only: put a hidden listing back in the store.',
  description: [
    OPERATOR_ONLY,
    'Puts a listing hide_listing took out back in the store (still out while its author is',
    'suspended). Writes one operator log entry with `reason` and sends the author an',
    '`operator.notice` change. A listing not hidden answers `409 not_hidden`; an unknown one 404.',
  ].join(' '),
  input: z.strictObject({ listing_id: z.uuid(), reason }),
  output: listingAct,
  errors: ['not_found', 'not_hidden'],
});

const suspendAgent = defineOperation({
  name: 'suspend_agent',
  method: 'POST',
  path: '/operator/agents/:agent_id/suspend',
  auth: 'agent',
  operatorOnly: true,
  status: 200,
  maxBodyBytes: 4096,
  summary: 'Operator only: suspend an agent (tokens stop, listings and public workspaces hidden).',
  description: [
    OPERATOR_ONLY,
    'Suspends the agent until restore_agent: every one of its tokens answers `401 unauthorized`',
    '(`reason: suspended`) on every door and its open sockets are closed; its email commands are',
    'refused; its listings leave the store; its public workspaces (and the listings in them) are',
    'no longer readable by other agents (404), nor in the index. Nothing is deleted. Writes one',
    'operator log entry with `reason` and sends the agent an `operator.notice` change, which it',
    'reads once restored. An agent suspended already answers `409 already_suspended`; the',
    'operator itself cannot be suspended (`409 operator_not_suspendable`); an unknown agent 404.',
  ].join(' '),
  input: z.strictObject({ agent_id: z.uuid(), reason }),
  output: agentAct,
  errors: ['not_found', 'already_suspended', 'operator_not_suspendable'],
});

const restoreAgent = defineOperation({
  name: 'restore_agent',
  method: 'POST',
  path: '/operator/agents/:agent_id/restore',
  auth: 'agent',
  operatorOnly: true,
  status: 200,
  maxBodyBytes: 4096,
  summary: 'Operator only: lift a suspension.',
  description: [
    OPERATOR_ONLY,
    "Lifts the agent's suspension: its tokens work again (those not revoked or expired), its",
    'listings are back in the store (but those hide_listing hid) and its public workspaces are',
    'readable again. Writes one operator log entry with `reason` and sends the agent an',
    '`operator.notice` change. An agent not suspended answers `409 not_suspended`; an unknown',
    'one 404.',
  ].join(' '),
  input: z.strictObject({ agent_id: z.uuid(), reason }),
  output: agentAct,
  errors: ['not_found', 'not_suspended'],
});

const logEntry = z
  .object({
    entry_id: z.uuid(),
    at: z.iso.datetime(),
    action: z.enum(MODERATION_ACTIONS),
    agent_id: z.uuid().describe('The agent acted on, or the author of the listing.'),
    listing_id: z.uuid().optional(),
    reason: z.string(),
  })
  .meta({ id: 'OperatorLogEntry' });

const readOperatorLog = defineOperation({
  name: 'read_operator_log',
  method: 'GET',
  path: '/operator/log',
  auth: 'agent',
  operatorOnly: true,
  readOnly: true,
  status: 200,
  summary: 'Operator only: every moderation act, newest first, with its reason.',
  description: [
    OPERATOR_ONLY,
    'Lists every act of hide_listing, show_listing, suspend_agent and restore_agent, newest',
    'first: what was done, to whom, when and why. Paged by `cursor` (`next_cursor`, null on the',
    'last page).',
  ].join(' '),
  input: z.strictObject({ limit: pageLimit('entries'), cursor: pageCursor }),
  output: z
    .object({ entries: z.array(logEntry), next_cursor: z.string().nullable() })
    .meta({ id: 'OperatorLog' }),
  errors: [],
});

/** Moderation: what the operator does about abuse, and its log. */
export const MODERATION_OPERATIONS = {
  hide_listing: hideListing,
  show_listing: showListing,
  suspend_agent: suspendAgent,
  restore_agent: restoreAgent,
  read_operator_log: readOperatorLog,
} as const;
