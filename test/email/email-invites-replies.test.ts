import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { simpleParser } from 'mailparser';
import { createMailAccount } from '../../actors/email/accounts.ts';
import { answerInviteReply } from '../../server/email/invite-replies.ts';
import type { InboundMail } from '../../server/email/inbound.ts';
import { TestClock } from '../helpers/clock.ts';
import { callJson } from '../helpers/http.ts';
import { sendToService } from '../helpers/mail-client.ts';
import { startMailSink, type MailSink } from '../helpers/mail-sink.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, type TestAgent } from '../helpers/workspaces.ts';

/**
 * Joining by replying to an email invite: only a reply from the invited address acts, only
 * while the invite is pending and in time, and every answer goes to that address alone.
 * Replies are handed to answerInviteReply as the SMTP door hands them, and sent through the
 * door itself with a real SMTP client.
 */
const test = suite<{ server: TestServer; sink: MailSink; clock: TestClock; timed: TestServer }>(
  'joining by replying to an email invite',
);

const DOMAIN = 'agents.test';

test.before(async (context) => {
  context.sink = await startMailSink();
  context.server = await startTestServer({ smtpUrl: context.sink.url, mailDomain: DOMAIN });
  // A second service on a test clock, keeping its mail in the outbox (no SMTP_URL).
  context.clock = new TestClock(Date.now());
  context.timed = await startTestServer({ mailDomain: DOMAIN, clock: context.clock });
});
test.after(async ({ server, sink, timed }) => {
  await server.close();
  await timed.close();
  await sink.close();
});

let people = 0;
const person = () => `person-${process.pid}-${++people}@example.org`;
let replies = 0;

interface SentInvite {
  inviteId: string;
  to: string;
  key: string;
  messageId: string;
}

/** An invite sent by email; its reply key and Message-ID read from the queued message. */
async function invite(server: TestServer, by: TestAgent, workspaceId: string): Promise<SentInvite> {
  const to = person();
  const made = await callJson<{ invite_id: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/invites/email`,
    by.api_token,
    { email: to },
  );
  assert.is(made.status, 202, JSON.stringify(made.body));
  const [row] = await server.services
    .db()
    .query<{ raw: Uint8Array }>(
      `select raw from mail_outbox where recipient = $1 and kind = 'invite'`,
      [to],
    );
  const parsed = await simpleParser(Buffer.from(row!.raw));
  const replyTo = parsed.replyTo?.value[0]?.address ?? '';
  const key = /^invite-([0-9a-f]+)@/.exec(replyTo)?.[1] ?? '';
  return { inviteId: made.body.invite_id, to, key, messageId: parsed.messageId ?? '' };
}

/** A reply as the door hands it on: new text only, addresses lower-case. */
function reply(sent: SentInvite, from: string, text: string): InboundMail {
  return {
    messageId: `<reply-${process.pid}-${++replies}@example.org>`,
    recipient: `invite-${sent.key}@${DOMAIN}`,
    from,
    envelopeFrom: from,
    remoteIp: '127.0.0.1',
    subject: 'You are invited to join a workspace',
    text,
    inReplyTo: sent.messageId,
    references: [sent.messageId],
    attachments: [],
    auth: { spf: 'none', dkim: 'none', dmarc: 'none', aligned: false },
  };
}

/** Messages queued (sent or not) other than invites: the answers. */
async function answersQueued(server: TestServer): Promise<number> {
  const [row] = await server.services
    .db()
    .query<{ n: number | string }>(`select count(*) as n from mail_outbox where kind <> 'invite'`);
  return Number(row?.n ?? 0);
}

async function inviteStatus(
  server: TestServer,
  owner: TestAgent,
  workspaceId: string,
  inviteId: string,
) {
  const listed = await callJson<{
    invites: { invite_id: string; status: string; joined_agent_id?: string }[];
  }>(server, 'GET', `/workspaces/${workspaceId}/invites`, owner.api_token);
  return listed.body.invites.find((each) => each.invite_id === inviteId);
}

async function agentCount(server: TestServer): Promise<number> {
  const [row] = await server.services
    .db()
    .query<{ n: number | string }>('select count(*) as n from agents');
  return Number(row?.n ?? 0);
}

test('a reply with a name signs up an agent that lives by email, makes it a member, and answers its keys to the invited address only, threaded', async ({
  server,
  sink,
}) => {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  const sent = await invite(server, owner, workspaceId);
  const mail = reply(sent, sent.to, 'Hello!\nname: Grace by mail\nThanks');
  await answerInviteReply(server.services, mail, sent.key);

  const answer = await sink.waitFor(
    (m) => m.envelope.to.includes(sent.to) && m.header('in-reply-to') === mail.messageId,
    'the answer to the reply',
  );
  assert.equal(answer.envelope.to, [sent.to]);
  assert.is(answer.header('auto-submitted'), 'auto-replied');
  assert.match(answer.header('references'), sent.messageId);
  assert.match(answer.subject, /^Re: /);
  const keys = parse(answer.text.split('\n\n')[1] ?? '') as {
    joined: boolean;
    workspace_id: string;
    agent_id: string;
    name: string;
    private_address: string;
    api_token: string;
  };
  assert.is(keys.joined, true);
  assert.is(keys.workspace_id, workspaceId);
  assert.is(keys.name, 'Grace by mail');
  assert.match(keys.private_address, new RegExp(`^a-[a-z2-7]{32}@${DOMAIN.replace('.', '\\.')}$`));

  const read = await callJson(server, 'GET', `/workspaces/${workspaceId}`, keys.api_token);
  assert.is(read.status, 200, 'the new agent reads the workspace with its token');
  const [account] = await server.services
    .db()
    .query<{ sender_address: string }>(
      'select sender_address from mail_accounts where agent_id = $1',
      [keys.agent_id],
    );
  assert.is(account?.sender_address, sent.to, 'its answers go to the invited address only');
  const row = await inviteStatus(server, owner, workspaceId, sent.inviteId);
  assert.is(row?.status, 'joined');
  assert.is(row?.joined_agent_id, keys.agent_id);
});

test('a reply from any other address does nothing and gets no answer', async ({ server }) => {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  const sent = await invite(server, owner, workspaceId);
  const answersBefore = await answersQueued(server);
  const agentsBefore = await agentCount(server);
  for (const from of [
    'stranger@example.org',
    `x${sent.to}`,
    sent.to.replace('example.org', 'example.net'),
  ]) {
    await answerInviteReply(server.services, reply(sent, from, 'name: Mallory'), sent.key);
  }
  // No From at all (a header without one) counts as a stranger too.
  await answerInviteReply(
    server.services,
    { ...reply(sent, sent.to, 'name: Mallory'), from: null },
    sent.key,
  );
  // A guessed key is no invite.
  await answerInviteReply(server.services, reply(sent, sent.to, 'name: Mallory'), 'f'.repeat(40));
  assert.is(await answersQueued(server), answersBefore, 'nothing was answered');
  assert.is(await agentCount(server), agentsBefore, 'no agent was made');
  assert.is((await inviteStatus(server, owner, workspaceId, sent.inviteId))?.status, 'pending');
});

test('a reply naming an agent whose mail account is the invited address makes it a member; an agent not linked to it is not let in', async ({
  server,
  sink,
}) => {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  const sent = await invite(server, owner, workspaceId);
  const other = await server.signUp();
  const refused = reply(sent, sent.to, `agent_id: ${other.agent_id}`);
  await answerInviteReply(server.services, refused, sent.key);
  const no = await sink.waitFor(
    (m) => m.header('in-reply-to') === refused.messageId,
    'the refusal',
  );
  assert.match(no.text, 'was not let in');
  assert.is(
    (await callJson(server, 'GET', `/workspaces/${workspaceId}`, other.api_token)).status,
    404,
  );

  const mine = await server.signUp();
  await createMailAccount(server.services.db(), server.services, {
    agentId: mine.agent_id,
    senderAddress: sent.to,
  });
  const named = reply(sent, sent.to, `agent_id: ${mine.agent_id}`);
  await answerInviteReply(server.services, named, sent.key);
  const yes = await sink.waitFor((m) => m.header('in-reply-to') === named.messageId, 'the answer');
  assert.match(yes.text, 'now a member');
  assert.is(
    (await callJson(server, 'GET', `/workspaces/${workspaceId}`, mine.api_token)).status,
    200,
  );
  const row = await inviteStatus(server, owner, workspaceId, sent.inviteId);
  assert.is(row?.joined_agent_id, mine.agent_id);
});

test('a reply that asks nothing is told what to write; a name sign-up refuses makes no agent and says why', async ({
  server,
  sink,
}) => {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  const sent = await invite(server, owner, workspaceId);
  const agentsBefore = await agentCount(server);
  const vague = reply(sent, sent.to, 'Sounds great, count me in!');
  await answerInviteReply(server.services, vague, sent.key);
  const how = await sink.waitFor(
    (m) => m.header('in-reply-to') === vague.messageId,
    'how to reply',
  );
  assert.match(how.text, 'name: <a name for a new agent>');
  const reserved = reply(sent, sent.to, 'name: service');
  await answerInviteReply(server.services, reserved, sent.key);
  const why = await sink.waitFor(
    (m) => m.header('in-reply-to') === reserved.messageId,
    'the refusal',
  );
  assert.match(why.text, 'No agent was made');
  assert.match(why.text, 'code: name_reserved');
  assert.is(await agentCount(server), agentsBefore);
  assert.is((await inviteStatus(server, owner, workspaceId, sent.inviteId))?.status, 'pending');
});

test('a reply after the invite expired or was revoked, and a second reply after joining, does nothing and gets no answer', async ({
  timed,
  clock,
}) => {
  const owner = await timed.signUp();
  const workspaceId = await newWorkspace(timed, owner);
  const expiring = await invite(timed, owner, workspaceId);
  const revoked = await invite(timed, owner, workspaceId);
  const joining = await invite(timed, owner, workspaceId);

  const gone = await callJson(
    timed,
    'DELETE',
    `/workspaces/${workspaceId}/invites/${revoked.inviteId}`,
    owner.api_token,
  );
  assert.is(gone.status, 200);
  await answerInviteReply(
    timed.services,
    reply(joining, joining.to, 'name: First reply'),
    joining.key,
  );
  const answers = await answersQueued(timed);
  assert.is(answers, 1, 'the first reply was answered');
  const agents = await agentCount(timed);

  await answerInviteReply(
    timed.services,
    reply(revoked, revoked.to, 'name: Too late'),
    revoked.key,
  );
  await answerInviteReply(
    timed.services,
    reply(joining, joining.to, 'name: Second reply'),
    joining.key,
  );
  clock.advance(168 * 3_600_000);
  await answerInviteReply(
    timed.services,
    reply(expiring, expiring.to, 'name: Expired'),
    expiring.key,
  );

  assert.is(await answersQueued(timed), answers, 'no further answer');
  assert.is(await agentCount(timed), agents, 'no further agent');
  const members = await callJson<{ members: unknown[] }>(
    timed,
    'GET',
    `/workspaces/${workspaceId}`,
    owner.api_token,
  );
  assert.is(members.body.members.length, 2, 'the owner and the first reply only');
});

test('through the SMTP door: a person joins by replying, and a second reply is refused at RCPT', async ({
  server,
  sink,
}) => {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  const sent = await invite(server, owner, workspaceId);
  const to = `invite-${sent.key}@${DOMAIN}`;
  await sendToService(server.smtpPort as number, {
    from: sent.to,
    to,
    subject: 'Re: You are invited to join a workspace',
    text: `name: Door guest\n\nOn Monday, service wrote:\n> agent_id: ${owner.agent_id}\n`,
    inReplyTo: sent.messageId,
    references: [sent.messageId],
  });
  const answer = await sink.waitFor(
    (m) =>
      m.envelope.to.includes(sent.to) &&
      m.header('in-reply-to') !== '' &&
      m.subject.startsWith('Re:'),
    'the answer to the reply through the door',
  );
  const keys = parse(answer.text.split('\n\n')[1] ?? '') as { name: string; api_token: string };
  assert.is(keys.name, 'Door guest', 'the new text counts, not the quoted history');
  assert.is(
    (await callJson(server, 'GET', `/workspaces/${workspaceId}`, keys.api_token)).status,
    200,
  );

  try {
    await sendToService(server.smtpPort as number, {
      from: sent.to,
      to,
      subject: 'Re: again',
      text: 'name: Another one',
    });
    assert.unreachable('a used invite address must be refused');
  } catch (error) {
    assert.is((error as { responseCode?: number }).responseCode, 550);
  }
});

test.run();
