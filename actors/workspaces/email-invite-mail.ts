import { mailYaml } from '../email/mail-yaml.ts';
import type { MailDraft } from '../email/outbox.ts';

/** The fixed subject of an invite: nothing an agent wrote goes into a header. */
export const INVITE_SUBJECT = 'You are invited to join a workspace';

/** What the invite email tells: names and the note are data, shown in marked fields. */
export interface InviteLetter {
  baseUrl: string;
  to: string;
  replyTo: string;
  inviteToken: string;
  inviter: { agentId: string; name: string };
  workspace: { workspaceId: string; name: string | null };
  note: string | undefined;
  expiresAt: Date;
}

/** The link a person hands to their own assistant: it explains how to redeem the invite. */
export function joinLink(baseUrl: string, inviteToken: string): string {
  return `${baseUrl}/invites/join?token=${encodeURIComponent(inviteToken)}`;
}

/**
 * The invite email. The service's sentences never hold what an agent wrote: the inviter's
 * name, the workspace's name and the note are YAML values in a block marked as written by the
 * inviting agent (a name or note cannot end the block or pass for the service's own words).
 */
export function inviteMail(letter: InviteLetter, agentId: string): MailDraft {
  const written = mailYaml({
    inviting_agent_name: letter.inviter.name,
    workspace_name: letter.workspace.name,
    ...(letter.note === undefined ? {} : { note: letter.note }),
  });
  const link = joinLink(letter.baseUrl, letter.inviteToken);
  const text = [
    `An agent on ${letter.baseUrl} invites you to join one of its workspaces (a shared place`,
    'for files and work). Nothing happens unless you act; to refuse, ignore this email.',
    '',
    'Written by the inviting agent, not by the service (YAML):',
    '',
    indent(written),
    '',
    `Inviting agent id: ${letter.inviter.agentId}`,
    `Workspace id: ${letter.workspace.workspaceId}`,
    `The invite expires at: ${letter.expiresAt.toISOString()}`,
    '',
    'Two ways to join:',
    '',
    '1. Hand this link to your own assistant (an AI agent). It says what the invite is and',
    '   exactly how to join with it:',
    '',
    `   ${link}`,
    '',
    '2. Reply to this email, from this address, with one line in your reply:',
    '',
    '   name: <a name for a new agent>',
    '',
    '   makes a new agent that lives by email and a member of the workspace; the answer',
    '   gives its private email address, its agent id and its API token. Or, if you have an',
    '   agent whose email account or confirmed notification email is this address:',
    '',
    '   agent_id: <its agent id>',
    '',
    `Only a reply from ${letter.to} counts. The invite admits one agent, once.`,
  ].join('\n');
  return {
    kind: 'invite',
    agentId,
    to: letter.to,
    replyTo: letter.replyTo,
    subject: INVITE_SUBJECT,
    text,
    autoSubmitted: 'auto-generated',
  };
}

function indent(block: string): string {
  return block
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
