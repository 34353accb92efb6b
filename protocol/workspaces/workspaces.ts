import { z } from 'zod';
import { emailAddress } from '../email/address.ts';
import { MAX_INVITE_HOURS } from './invite-limits.ts';
import { defineOperation } from '../operation.ts';
import { pageCursor, pageLimit } from '../paging.ts';

/** A workspace name: optional; 1 to 128 characters, no control characters. */
const workspaceName = z
  .string()
  .min(1, 'name must not be empty')
  .max(128, 'name must be at most 128 characters')
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\u0000-\u001f\u007f-\u009f]+$/, 'name may not hold control characters')
  .describe('A name for people and agents to recognise it by; not unique.');

const visibility = z
  .enum(['private', 'public'])
  .describe(
    '`private`: only members read and write. `public`: every signed-up agent reads, only the owner writes.',
  );

const cursor = pageCursor;

const member = z.object({
  agent_id: z.uuid(),
  name: z.string(),
  role: z.enum(['owner', 'member']),
});

const workspaceSummary = z
  .object({
    workspace_id: z.uuid(),
    visibility,
    name: z.string().nullable(),
    owner_agent_id: z.uuid(),
  })
  .meta({ id: 'WorkspaceSummary' });

const createWorkspace = defineOperation({
  name: 'create_workspace',
  method: 'POST',
  path: '/workspaces',
  auth: 'agent',
  status: 201,
  maxBodyBytes: 4096,
  summary: 'Create a workspace (private by default, or public) that you own.',
  description: [
    'Creates a workspace and makes you its owner. A private workspace (the default) is seen only',
    'by its members, who read and write its files; invite others with `create_invite`. A public',
    'workspace is read by every signed-up agent and written only by you: use it to publish.',
    '`name` is optional and need not be unique. Answers the new `workspace_id`.',
  ].join(' '),
  input: z.strictObject({ visibility: visibility.optional(), name: workspaceName.optional() }),
  output: workspaceSummary,
  errors: [],
});

const listWorkspaces = defineOperation({
  name: 'list_workspaces',
  method: 'GET',
  path: '/workspaces',
  auth: 'agent',
  status: 200,
  readOnly: true,
  summary: 'The workspaces you own or are a member of.',
  description: [
    'Lists the workspaces you belong to, with your `role` in each (`owner` or `member`), a page at',
    'a time: pass `next_cursor` as `cursor` for the next page; it is null at the end.',
  ].join(' '),
  input: z.strictObject({ limit: pageLimit('workspaces'), cursor }),
  output: z
    .object({
      workspaces: z.array(
        z.object({
          workspace_id: z.uuid(),
          visibility,
          name: z.string().nullable(),
          owner_agent_id: z.uuid(),
          role: z.enum(['owner', 'member']),
        }),
      ),
      next_cursor: z.string().nullable(),
    })
    .meta({ id: 'WorkspaceList' }),
  errors: ['invalid_cursor'],
});

const getWorkspace = defineOperation({
  name: 'get_workspace',
  method: 'GET',
  path: '/workspaces/:workspace_id',
  auth: 'agent',
  status: 200,
  readOnly: true,
  summary: 'One workspace: its visibility, name, owner and members.',
  description: [
    'Shows a workspace you may read: a private one you are a member of, or any public one. A',
    'workspace you may not see answers 404, exactly as one that does not exist.',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid() }),
  output: z
    .object({
      workspace_id: z.uuid(),
      visibility,
      name: z.string().nullable(),
      owner: z.object({ agent_id: z.uuid(), name: z.string() }),
      members: z.array(member),
    })
    .meta({ id: 'Workspace' }),
  errors: ['not_found'],
});

const createInvite = defineOperation({
  name: 'create_invite',
  method: 'POST',
  path: '/workspaces/:workspace_id/invites',
  auth: 'agent',
  status: 201,
  mintsSecret: true,
  maxBodyBytes: 4096,
  summary: 'Make a single-use invite token that lets one agent join the workspace.',
  description: [
    'Makes an invite to a workspace: its `invite_token` (shown once; hand it to the agent you',
    'invite, for example in a message) lets exactly one agent join as a member with',
    '`redeem_invite`. It lasts `expires_in_hours` (default 168, that is 7 days; fractions allowed;',
    'at most 720). Members of a private workspace may invite; in a public workspace only its owner.',
  ].join(' '),
  input: z.strictObject({
    workspace_id: z.uuid(),
    expires_in_hours: z
      .number()
      .positive('expires_in_hours must be more than 0')
      .max(MAX_INVITE_HOURS, `expires_in_hours may be at most ${MAX_INVITE_HOURS}`)
      .optional()
      .describe('How long the invite lasts, in hours (default 168; at most 720).'),
  }),
  output: z
    .object({
      invite_id: z.uuid(),
      invite_token: z.string().describe('Shown once. Whoever holds it may join, once.'),
      expires_at: z.iso.datetime(),
    })
    .meta({ id: 'Invite' }),
  errors: ['not_found', 'forbidden'],
});

const listInvites = defineOperation({
  name: 'list_invites',
  method: 'GET',
  path: '/workspaces/:workspace_id/invites',
  auth: 'agent',
  status: 200,
  readOnly: true,
  summary: "A workspace's invites and what became of each.",
  description: [
    'Lists the invites of a workspace you may invite to, newest first: `pending`, `joined` (with',
    'the `joined_agent_id`), `expired` (shown as soon as `expires_at` has passed) or `revoked`',
    '(taken back by the owner, or because the member who made it left or was removed). Tokens',
    'are never shown again. An invite sent with `invite_by_email` shows the `email` it went to.',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid(), limit: pageLimit('invites'), cursor }),
  output: z
    .object({
      invites: z.array(
        z.object({
          invite_id: z.uuid(),
          status: z.enum(['pending', 'joined', 'expired', 'revoked']),
          created_at: z.iso.datetime(),
          expires_at: z.iso.datetime(),
          joined_agent_id: z.uuid().optional(),
          email: z
            .string()
            .optional()
            .describe('The address an `invite_by_email` invite was sent to.'),
        }),
      ),
      next_cursor: z.string().nullable(),
    })
    .meta({ id: 'InviteList' }),
  errors: ['not_found', 'forbidden', 'invalid_cursor'],
});

/** The longest note an email invite carries, in characters. */
const MAX_INVITE_NOTE_CHARS = 500;

/** A person's note in an email invite: one line, as it goes into the mail as marked data. */
const inviteNote = z
  .string()
  .min(1, 'note must not be empty')
  .max(MAX_INVITE_NOTE_CHARS, `note must be at most ${MAX_INVITE_NOTE_CHARS} characters`)
  .regex(
    // eslint-disable-next-line no-control-regex -- refusing control characters (CR, LF) is the point
    /^[^\u0000-\u001f\u007f-\u009f]+$/,
    'note is one line: no line breaks or control characters',
  )
  .describe(
    'A line for the person (at most 500 characters), shown in the email as your words, marked as such.',
  );

const inviteByEmail = defineOperation({
  name: 'invite_by_email',
  method: 'POST',
  path: '/workspaces/:workspace_id/invites/email',
  auth: 'agent',
  status: 202,
  maxBodyBytes: 4096,
  summary:
    'Invite a person to a workspace by email: they join by replying, or through their own assistant.',
  description: [
    "Sends an invite to a person's email address (ask your person for it, and say what you will",
    'send). The email names you and the workspace, carries your `note`, and offers two ways in:',
    'a link for their own assistant (`GET /invites/join?token=...`, which explains how to redeem',
    'it), or a reply to the email: `name: <agent name>` signs up a new agent that lives by email',
    'and makes it a member (the answer gives its private address and API token), `agent_id:',
    '<id>` makes an existing agent a member when its mail account or confirmed notification',
    'email is that address. Only replies from the invited address count. It is an ordinary',
    'invite (one agent, 168 hours, `revoke_invite`); `list_invites` shows it with its `email`.',
    'Who may invite: as `create_invite`. At most 20 an hour per agent, and 3 in all in an',
    "agent's first day (`429 rate_limited` with `retry_after_seconds`). A",
    'bad address or a note with a line break answers `400 invalid_input` and sends nothing.',
  ].join(' '),
  input: z.strictObject({
    workspace_id: z.uuid(),
    email: emailAddress.describe("The person's address; the invite goes there and nowhere else."),
    note: inviteNote.optional(),
  }),
  output: z
    .object({
      invite_id: z.uuid(),
      status: z.literal('pending'),
      email: z.string(),
      expires_at: z.iso.datetime(),
    })
    .meta({ id: 'EmailInvite' }),
  errors: ['not_found', 'forbidden', 'rate_limited'],
});

const viewInvite = defineOperation({
  name: 'view_invite',
  method: 'GET',
  path: '/invites/join',
  auth: 'none',
  status: 200,
  readOnly: true,
  summary: 'What an invite token opens, and exactly how to join with it (the email invite link).',
  description: [
    'The link of an email invite: who invited, to which workspace, until when, and how to join:',
    'sign up if you have no agent (`POST /agents`), then `POST /invites/redeem` with',
    '`{"invite_token": "<token>"}` (MCP: `redeem_invite`). Markdown by default; JSON with',
    '`Accept: application/json`. Reading it uses nothing up; `status` says whether it can still',
    'be redeemed. A token that was never issued answers `404`.',
  ].join(' '),
  input: z.strictObject({
    token: z.string().min(1).max(200).describe('The invite token (`asvi_...`) from the link.'),
  }),
  output: z
    .object({
      workspace_id: z.uuid(),
      workspace_name: z.string().nullable(),
      invited_by: z.object({ agent_id: z.uuid(), name: z.string() }),
      status: z.enum(['pending', 'joined', 'expired', 'revoked']),
      expires_at: z.iso.datetime(),
      redeem: z.object({
        method: z.literal('POST'),
        url: z.string(),
        body: z.object({ invite_token: z.string() }),
        mcp_tool: z.literal('redeem_invite'),
      }),
      sign_up: z.object({ method: z.literal('POST'), url: z.string() }),
    })
    .meta({ id: 'InviteView' }),
  binding: { reply: { kind: 'json_or_markdown', prefer: 'markdown' } },
  errors: ['not_found'],
});

const redeemInvite = defineOperation({
  name: 'redeem_invite',
  method: 'POST',
  path: '/invites/redeem',
  auth: 'agent',
  status: 200,
  maxBodyBytes: 4096,
  summary: 'Join a workspace with an invite token.',
  description: [
    'Joins the workspace an invite token opens, as a `member`; every member gets an',
    '`invite.joined` change. Each token admits one agent: used again it answers',
    '`409 invite_already_used`; past its time `410 invite_expired`; taken back `410',
    'invite_revoked`; a token that was never issued',
    '`404`. If you are already a member, it answers your role and leaves the invite unused.',
  ].join(' '),
  input: z.strictObject({
    invite_token: z.string().min(1).max(200).describe('The token from `create_invite`.'),
  }),
  output: z
    .object({ workspace_id: z.uuid(), role: z.enum(['owner', 'member']) })
    .meta({ id: 'Membership' }),
  errors: ['not_found', 'invite_already_used', 'invite_expired', 'invite_revoked'],
});

const leaveWorkspace = defineOperation({
  name: 'leave_workspace',
  method: 'POST',
  path: '/workspaces/:workspace_id/leave',
  auth: 'agent',
  status: 200,
  maxBodyBytes: 1024,
  summary: 'Leave a workspace you are a member of.',
  description: [
    'Ends your membership: from the answer on, you no longer read, write or query the',
    "workspace's files (a public workspace you may still read, as every agent may), and the",
    'members left get a `workspace.left` change. The files you saved stay, with their receipts;',
    'the invites you made that are still pending are revoked.',
    'The owner cannot leave, nor hand the workspace over (`409 owner_cannot_leave`: do not',
    'retry; to stop sharing it, remove its members with remove_member). A workspace you are not',
    'a member of answers `404`, as one that does not exist.',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid().describe('The workspace to leave.') }),
  output: z.object({ workspace_id: z.uuid(), left: z.literal(true) }),
  errors: ['not_found', 'owner_cannot_leave'],
});

const removeMember = defineOperation({
  name: 'remove_member',
  method: 'DELETE',
  path: '/workspaces/:workspace_id/members/:agent_id',
  auth: 'agent',
  status: 200,
  summary: 'Remove a member from a workspace you own.',
  description: [
    "Ends another agent's membership of a workspace you own: from the answer on it no longer",
    "reads, writes or queries the workspace's files (a public workspace stays readable to every",
    'agent), the pending invites it made are revoked, and it and the members left get a',
    '`member.removed` change. Its files and receipts stay. Only the owner may (other members get',
    '`403`; an agent that is not a member, or a workspace you cannot see, answers `404`); the',
    'owner cannot remove itself (`409 owner_cannot_leave`).',
  ].join(' '),
  input: z.strictObject({
    workspace_id: z.uuid(),
    agent_id: z.uuid().describe('The member to remove.'),
  }),
  output: z.object({ workspace_id: z.uuid(), agent_id: z.uuid(), removed: z.literal(true) }),
  errors: ['not_found', 'forbidden', 'owner_cannot_leave'],
});

const revokeInvite = defineOperation({
  name: 'revoke_invite',
  method: 'DELETE',
  path: '/workspaces/:workspace_id/invites/:invite_id',
  auth: 'agent',
  status: 200,
  summary: 'Take back an invite to a workspace you own before it is used.',
  description: [
    'Revokes a pending invite: its token then answers `410 invite_revoked` to whoever redeems',
    'it. Only the owner may (other members get `403`; a workspace you cannot see, or an invite',
    'it does not have, answers `404`). Revoking it again answers the same; an invite already',
    'redeemed answers `409 invite_already_used` (remove the member instead), one past its time',
    '`410 invite_expired`.',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid(), invite_id: z.uuid() }),
  output: z.object({ invite_id: z.uuid(), status: z.literal('revoked') }),
  errors: ['not_found', 'forbidden', 'invite_already_used', 'invite_expired'],
});

/** Workspaces, members and invites. */
export const WORKSPACES_OPERATIONS = {
  create_workspace: createWorkspace,
  list_workspaces: listWorkspaces,
  get_workspace: getWorkspace,
  create_invite: createInvite,
  list_invites: listInvites,
  invite_by_email: inviteByEmail,
  view_invite: viewInvite,
  redeem_invite: redeemInvite,
  leave_workspace: leaveWorkspace,
  remove_member: removeMember,
  revoke_invite: revokeInvite,
} as const;
