import { ServiceError } from '../../protocol/errors.ts';
import { findNotificationEmail } from '../../storage/email/notification-emails.ts';
import type { Queryable } from '../../storage/driver.ts';
import { createMailAccount, mailAccountOfAgent, privateAddress } from '../email/accounts.ts';
import { mailYaml } from '../email/mail-yaml.ts';
import { enqueueMail, type MailDraft } from '../email/outbox.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { joinThroughInvite } from './email-invite-join.ts';
import { INVITE_SUBJECT } from './email-invite-mail.ts';
import { findInviteByMailKey, type EmailInvite } from './email-invites.ts';

/** As much of a checked inbound message (server/email/inbound.ts) as a reply to an invite needs. */
export interface InviteReply {
  /** Message-ID with angle brackets. */
  messageId: string;
  /** The invite's reply address it was sent to: answers that ask to try again name it. */
  recipient?: string;
  /** The header From's address, lower-case; null when it had none. */
  from: string | null;
  subject: string;
  /** The new text only: quoted history and signatures already removed by the door. */
  text: string;
  references: string[];
}

/** Signs up a new agent through the doors' own path (server/invoke.ts), as sign_up answers. */
export type SignUp = (
  name: string,
) => Promise<{ agent_id: string; name: string; api_token: string }>;

/** What a reply asks: a new agent by name, an existing agent by id, or nothing we can read. */
type ReplyAsk =
  { kind: 'name'; name: string } | { kind: 'agent_id'; agentId: string } | { kind: 'unclear' };

const ASK_LINE = /^\s*(name|agent_id)\s*:\s*(.*?)\s*$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The first `name: ...` or `agent_id: ...` line of the reply's new text. */
function readInviteReply(text: string): ReplyAsk {
  for (const line of text.split(/\r?\n/)) {
    const found = ASK_LINE.exec(line);
    if (!found) continue;
    const value = unquoted(found[2] as string);
    if (value === '') continue;
    if ((found[1] as string).toLowerCase() === 'name') return { kind: 'name', name: value };
    return { kind: 'agent_id', agentId: value.toLowerCase() };
  }
  return { kind: 'unclear' };
}

function unquoted(value: string): string {
  const quoted = /^(["'])(.*)\1$/.exec(value);
  return quoted ? (quoted[2] as string) : value;
}

/**
 * A reply to an email invite (mail for `invite-<key>@MAIL_DOMAIN`). It acts only while the
 * invite is pending and in time, and only for a reply from the invited address: any other From
 * does nothing and is not answered (a stranger learns nothing, and the service mails no one it
 * was not asked to). Every answer goes to the invited address only, threaded to the reply.
 * Answers what it did: `ignored` or `answered`.
 */
export async function answerReplyToInvite(
  services: Services,
  reply: InviteReply,
  key: string,
  signUp: SignUp,
): Promise<'ignored' | 'answered'> {
  const invite = await findInviteByMailKey(services.db(), key, new Date(services.clock.now()));
  if (!invite || reply.from === null || reply.from.toLowerCase() !== invite.email) return 'ignored';
  const ask = readInviteReply(reply.text);
  if (ask.kind === 'unclear') {
    await answer(services.db(), services, reply, invite, null, HOW_TO_REPLY, reply.recipient);
  } else if (ask.kind === 'agent_id') {
    await joinAsExistingAgent(services, reply, invite, ask.agentId);
  } else {
    await joinAsNewAgent(services, reply, invite, ask.name, signUp);
  }
  return 'answered';
}

const HOW_TO_REPLY = [
  'Your reply did not say how to join. Reply to the invite again with one line:',
  '',
  '  name: <a name for a new agent>',
  '',
  'for a new agent that lives by email, or',
  '',
  '  agent_id: <the id of your agent>',
  '',
  'for an agent whose email account or confirmed notification email is this address.',
].join('\n');

async function joinAsNewAgent(
  services: Services,
  reply: InviteReply,
  invite: EmailInvite,
  name: string,
  signUp: SignUp,
): Promise<void> {
  let agent: Awaited<ReturnType<SignUp>>;
  try {
    agent = await signUp(name);
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    // Nothing was made: say why, so the person can reply again with another name.
    await answer(
      services.db(),
      services,
      reply,
      invite,
      null,
      refused('No agent was made', error),
      reply.recipient,
    );
    return;
  }
  const principal = await principalOf(services, agent.agent_id);
  const credentials = async (db: Queryable) => {
    const account = await createMailAccount(db, services, {
      agentId: agent.agent_id,
      senderAddress: invite.email,
    });
    return {
      agent_id: agent.agent_id,
      name: agent.name,
      private_address: privateAddress(services, account),
      api_token: agent.api_token,
    };
  };
  try {
    // The membership, the mail account and the answer with the token commit together.
    await joinThroughInvite(services, principal, invite, async (tx, joined) => {
      const made = await credentials(tx);
      await answer(tx, services, reply, invite, agent.agent_id, newAgentText(made, joined));
    });
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    // The invite went another way meanwhile: the agent exists, so its person gets its keys.
    const made = await credentials(services.db());
    await answer(
      services.db(),
      services,
      reply,
      invite,
      agent.agent_id,
      `${refused('Your new agent could not join the workspace', error)}\n\n${yamlOf(made)}`,
    );
  }
}

function newAgentText(
  made: { agent_id: string; name: string; private_address: string; api_token: string },
  joined: { workspace_id: string; role: string },
): string {
  return [
    'Welcome. A new agent was made for you, and it is now a member of the workspace.',
    '',
    yamlOf({ joined: true, workspace_id: joined.workspace_id, role: joined.role, ...made }),
    '',
    'Keep this email: the api_token is shown only this once, and the private address is a',
    'credential too (whoever sends from your address to it acts as your agent). Send commands',
    'by email to the private address, from this address: the subject is a tool name, the body',
    'the YAML of its input; `help` lists them. Or use the api_token over HTTP or MCP.',
  ].join('\n');
}

async function joinAsExistingAgent(
  services: Services,
  reply: InviteReply,
  invite: EmailInvite,
  agentId: string,
): Promise<void> {
  const db = services.db();
  const agent = UUID.test(agentId) ? await services.agents.get(agentId) : null;
  if (!agent || !(await reachedAt(db, agentId, invite.email))) {
    // One answer for an unknown agent and another person's: nothing is told about either.
    await answer(
      db,
      services,
      reply,
      invite,
      null,
      [
        `No agent ${yamlValue(agentId)} has this address as its email account or confirmed`,
        'notification email, so it was not let in. Reply with `name: <a name>` for a new agent,',
        'or have your agent redeem the invite with the link in the invite email.',
      ].join('\n'),
    );
    return;
  }
  try {
    await joinThroughInvite(services, agent.principal, invite, async (tx, joined) => {
      const text = joined.joined
        ? 'Your agent is now a member of the workspace.'
        : 'Your agent was in the workspace already; the invite stays unused.';
      await answer(tx, services, reply, invite, agentId, `${text}\n\n${yamlOf(joined)}`);
    });
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    await answer(db, services, reply, invite, agentId, refused('Your agent could not join', error));
  }
}

/** Whether the agent's mail account or confirmed notification email is `email`. */
async function reachedAt(db: Queryable, agentId: string, email: string): Promise<boolean> {
  const [account, notification] = await Promise.all([
    mailAccountOfAgent(db, agentId),
    findNotificationEmail(db, agentId),
  ]);
  return (
    account?.senderAddress === email ||
    (notification?.status === 'confirmed' && notification.email.toLowerCase() === email)
  );
}

async function principalOf(services: Services, agentId: string): Promise<Principal> {
  const agent = await services.agents.get(agentId);
  if (!agent) throw new Error(`the agent ${agentId} just signed up is not found`);
  return agent.principal;
}

function refused(what: string, error: ServiceError): string {
  return `${what}:\n\n${yamlOf({ code: error.code, detail: error.message })}`;
}

/**
 * Answers the reply: to the invited address only, threaded, marked as an automatic answer.
 * `replyTo` (the invite's reply address) when the answer asks to reply again; otherwise a reply
 * goes to service@, which answers where to write.
 */
async function answer(
  db: Queryable,
  services: Services,
  reply: InviteReply,
  invite: EmailInvite,
  agentId: string | null,
  text: string,
  replyTo?: string,
): Promise<void> {
  const draft: MailDraft = {
    kind: 'invite_answer',
    agentId,
    to: invite.email,
    ...(replyTo === undefined ? {} : { replyTo }),
    subject: `Re: ${reply.subject || INVITE_SUBJECT}`.slice(0, 200),
    text,
    inReplyTo: reply.messageId,
    references: [...reply.references.slice(-9), reply.messageId],
    autoSubmitted: 'auto-replied',
  };
  await enqueueMail(db, services, draft);
}

function yamlOf(value: unknown): string {
  return mailYaml(value).trimEnd();
}

function yamlValue(value: string): string {
  return JSON.stringify(value.slice(0, 100));
}
