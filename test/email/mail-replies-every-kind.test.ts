import { generateKeyPairSync } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { MAIL_KINDS, type MailKind } from '../../actors/email/mail-kinds.ts';
import { callJson } from '../helpers/http.ts';
import { startDnsStub, type DnsStub } from '../helpers/dns-stub.ts';
import { sendToService } from '../helpers/mail-client.ts';
import { startMailSink, type MailSink, type SunkMail } from '../helpers/mail-sink.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Every kind of mail that asks for a reply (actors/email/mail-kinds.ts) is replied to exactly as
 * a mail program does: to its Reply-To (else its From), with In-Reply-To and References, through
 * nodemailer to the real SMTP door; the reply must reach the door and do what the mail asked.
 */
interface Context {
  server: TestServer;
  sink: MailSink;
  dns: DnsStub;
  privateKey: string;
  /** Resolves when the service logs a line that `matches`. */
  logged: (matches: RegExp) => Promise<string>;
}
const DOMAIN = 'replies.test';
const SENDER = 'owner@person.example';
const INVITED = 'friend@other.example';
const test = suite<Context>('every mail that asks for a reply can be answered by a mail program');

test.before(async (context) => {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  context.privateKey = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicKey = keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  context.dns = await startDnsStub({
    'person.example': { TXT: ['v=spf1 -all'] },
    'mail._domainkey.person.example': { TXT: [`v=DKIM1; k=rsa; p=${publicKey}`] },
    '_dmarc.person.example': { TXT: ['v=DMARC1; p=reject'] },
  });
  context.sink = await startMailSink();
  const lines: string[] = [];
  const waiting = new Set<() => void>();
  context.logged = (matches) =>
    new Promise((resolve, reject) => {
      const deadline = setTimeout(() => {
        waiting.delete(look);
        reject(new Error(`no log line ${matches} within 10 s; logged:\n${lines.join('\n')}`));
      }, 10_000);
      const look = () => {
        const line = lines.find((each) => matches.test(each));
        if (line === undefined) return;
        clearTimeout(deadline);
        waiting.delete(look);
        resolve(line);
      };
      waiting.add(look);
      look();
    });
  context.server = await startTestServer({
    log: (line) => {
      lines.push(line);
      for (const look of [...waiting]) look();
    },
    mailDomain: DOMAIN,
    smtpUrl: context.sink.url,
    mailDnsServers: [context.dns.server],
    mailDnsTimeoutMs: 1000,
  });
});
test.after(async ({ server, sink, dns }) => {
  await server.close();
  await sink.close();
  await dns.close();
});

/** The kind the service queued `mail` as. */
async function kindOf(server: TestServer, mail: SunkMail): Promise<string> {
  const [row] = await server.services
    .db()
    .query<{ kind: string }>('select kind from mail_outbox where message_id = $1', [
      mail.messageId.slice(1, -1),
    ]);
  return row?.kind ?? '';
}

/** Where a mail program sends a reply: Reply-To, else From. */
function replyAddress(mail: SunkMail): string {
  return (
    mail.parsed.replyTo?.value[0]?.address ??
    mail.parsed.from?.value[0]?.address ??
    ''
  ).toLowerCase();
}

/** Replies to `mail` as a mail program does and waits for the service's answer to the reply. */
async function replyTo(
  context: Context,
  mail: SunkMail,
  text: string,
  options: { from?: string; signed?: boolean } = {},
): Promise<SunkMail> {
  const { messageId } = await sendToService(context.server.smtpPort!, {
    from: options.from ?? SENDER,
    to: replyAddress(mail),
    subject: `Re: ${mail.subject}`,
    text,
    inReplyTo: mail.messageId,
    references: [mail.messageId],
    ...(options.signed
      ? {
          dkim: {
            domainName: 'person.example',
            keySelector: 'mail',
            privateKey: context.privateKey,
          },
        }
      : {}),
  });
  return context.sink.waitFor(
    (sunk) => sunk.header('in-reply-to') === messageId,
    `the answer to a reply to ${mail.subject}`,
  );
}

async function first(context: Context, to: string, subject: string, text: string, signed = false) {
  const { messageId } = await sendToService(context.server.smtpPort!, {
    from: SENDER,
    to,
    subject,
    text,
    ...(signed
      ? {
          dkim: {
            domainName: 'person.example',
            keySelector: 'mail',
            privateKey: context.privateKey,
          },
        }
      : {}),
  });
  return context.sink.waitFor((sunk) => sunk.header('in-reply-to') === messageId, subject);
}

test('each kind of mail that asks for a reply is answered through its Reply-To and does its work', async (context) => {
  const { server, sink } = context;
  const replied = new Set<MailKind>();
  const expectKind = async (mail: SunkMail, kind: MailKind) => {
    assert.is(await kindOf(server, mail), kind);
    replied.add(kind);
  };

  // sign_up_refused: a sign-up without a name; the reply names one and gets a code.
  const refused = await first(context, `join@${DOMAIN}`, 'sign-up', 'hello');
  await expectKind(refused, 'sign_up_refused');
  const codeMail = await replyTo(context, refused, 'name: replying-bot');
  // sign_up_code: the reply carries the code and signs up.
  await expectKind(codeMail, 'sign_up_code');
  const code = /\b(\d{6})\b/.exec(codeMail.text)![1]!;
  const done = await replyTo(context, codeMail, code);
  // sign_up_done: a reply reaches the new private address and is answered as a command.
  await expectKind(done, 'sign_up_done');
  const account = parse(done.text.slice(done.text.indexOf('private_address'))) as {
    private_address: string;
    api_token: string;
  };
  assert.is(replyAddress(done), account.private_address);
  const answered = await replyTo(context, done, 'help');
  await expectKind(answered, 'answer');
  // answer: a reply to a command's answer is the next command (its subject: `Re: <command>`).
  const whoami = await first(context, account.private_address, 'whoami', '');
  const again = await replyTo(context, whoami, '');
  assert.match(again.text, /agent_id:/);

  // confirmation_request: an unaligned change is held; an aligned reply carries it out.
  const request = await first(context, account.private_address, 'create_workspace', 'name: held');
  await expectKind(request, 'confirmation_request');
  const carried = await replyTo(context, request, 'yes', { signed: true });
  assert.match(carried.text, /workspace_id/);

  // invite: the invited person's reply joins; invite_answer: a reply that said nothing useful
  // is answered with how to reply, and the reply to that answer joins.
  const workspace = await callJson<{ workspace_id: string }>(
    server,
    'POST',
    '/workspaces',
    account.api_token,
    { name: 'w' },
  );
  assert.is(workspace.status, 201, JSON.stringify(workspace.body));
  const made = await callJson(
    server,
    'POST',
    `/workspaces/${workspace.body.workspace_id}/invites/email`,
    account.api_token,
    { email: INVITED },
  );
  assert.is(made.status, 202, JSON.stringify(made.body));
  const invite = await sink.waitFor((sunk) => sunk.envelope.to.includes(INVITED), 'the invite');
  await expectKind(invite, 'invite');
  const howTo = await replyTo(context, invite, 'thanks!', { from: INVITED });
  await expectKind(howTo, 'invite_answer');
  const joined = await replyTo(context, howTo, 'name: invited-bot', { from: INVITED });
  assert.match(joined.text, /private_address/);

  const asking = (Object.keys(MAIL_KINDS) as MailKind[]).filter(
    (kind) => MAIL_KINDS[kind].asksForReply,
  );
  assert.equal(
    [...replied].sort(),
    asking.sort(),
    'every kind that asks for a reply has a row here',
  );
});

test('mail to service@ is answered with where to write, once an hour per sender', async (context) => {
  const answer = await first(context, `service@${DOMAIN}`, 'hello?', 'Is anyone there?');
  assert.is(await kindOf(context.server, answer), 'service_answer');
  assert.match(answer.text, new RegExp(`join@${DOMAIN}`));
  assert.is(answer.header('auto-submitted'), 'auto-replied');
  // The same sender again within the hour: kept, logged, not answered (a forged From gets one).
  const { messageId } = await sendToService(context.server.smtpPort!, {
    from: SENDER,
    to: `service@${DOMAIN}`,
    subject: 'hello again?',
    text: 'Still there?',
  });
  await context.logged(new RegExp(`to service@ from ${SENDER} past its limit, not answered`));
  assert.not.ok(
    context.sink.mails.some((sunk) => sunk.header('in-reply-to') === messageId),
    'no second answer',
  );
});

test('timestamps in YAML answers are quoted, so a YAML 1.1 reader keeps them strings', async (context) => {
  const codeMail = await first(context, `join@${DOMAIN}`, 'sign-up', 'name: yaml-bot');
  const code = /\b(\d{6})\b/.exec(codeMail.text)![1]!;
  const done = await replyTo(context, codeMail, code);
  const me = (
    parse(done.text.slice(done.text.indexOf('private_address'))) as { private_address: string }
  ).private_address;
  const whoami = await first(context, me, 'whoami', '');
  const read = parse(whoami.text, { schema: 'yaml-1.1' }) as Record<string, unknown>;
  const dates = Object.entries(read).filter(([, value]) => value instanceof Date);
  assert.equal(dates, [], whoami.text);
  assert.ok(
    Object.values(read).some(
      (value) => typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value),
    ),
    whoami.text,
  );
});

test.run();
