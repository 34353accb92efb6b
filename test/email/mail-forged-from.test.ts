import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { stringify } from 'yaml';
import { resolveBinding } from '../../protocol/binding.ts';
import type { Operation } from '../../protocol/operation.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { startDnsStub, type DnsStub } from '../helpers/dns-stub.ts';
import {
  openMailSession,
  sendToService,
  type MailSession,
  type OutgoingMail,
} from '../helpers/mail-client.ts';
import { validInput } from '../helpers/operation-inputs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A From is free to forge. Through the real SMTP door (nodemailer), every mail command of the
 * operation table that changes anything, sent unsigned with the From of an agent's sign-up
 * address, is held for a confirmation sent to that address and never runs; every read answers
 * only that address. The same command DKIM-signed by the address's domain (DMARC pass, served
 * by a local DNS stub) runs at once.
 */
interface Context {
  server: TestServer;
  /** One SMTP connection for the unsigned messages (the door greets each new one 100 ms late). */
  mail: MailSession;
  dns: DnsStub;
  privateKey: string;
  agent: { agentId: string; privateAddress: string };
}

const DOMAIN = 'forged.test';
const OWNER = 'alice@alice.example';

const test = suite<Context>('mail with a forged From runs no command that changes anything');

test.before(async (context) => {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  context.privateKey = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicKey = keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  context.dns = await startDnsStub({
    'alice.example': { TXT: ['v=spf1 -all'] },
    'mail._domainkey.alice.example': { TXT: [`v=DKIM1; k=rsa; p=${publicKey}`] },
    '_dmarc.alice.example': { TXT: ['v=DMARC1; p=reject'] },
  });
  context.server = await startTestServer({
    mailDomain: DOMAIN,
    mailDnsServers: [context.dns.server],
    mailDnsTimeoutMs: 1000,
  });
  context.mail = openMailSession(context.server.smtpPort!);
  context.agent = await signUpByMail(context);
});
test.after(async ({ server, dns, mail }) => {
  mail.close();
  await server.close();
  await dns.close();
});

interface Answer {
  recipient: string;
  kind: string;
  text: string;
}

/** The answers queued to one message (by In-Reply-To); the door has handled it when SMTP says 250. */
async function answersTo(server: TestServer, messageId: string): Promise<Answer[]> {
  const rows = await server.services
    .db()
    .query<{ recipient: string; kind: string; raw: Uint8Array }>(
      `select recipient, kind, raw from mail_outbox where created_at >= $1
       order by created_at, mail_id`,
      [sentAt.get(messageId) ?? new Date(0)],
    );
  const answers: Answer[] = [];
  for (const row of rows) {
    const parsed = await simpleParser(Buffer.from(row.raw));
    if (parsed.inReplyTo === messageId)
      answers.push({ recipient: row.recipient, kind: row.kind, text: parsed.text ?? '' });
  }
  return answers;
}

/** When each message was sent (its answers are queued after). */
const sentAt = new Map<string, Date>();

/** Sends `mail` (a DKIM-signed one on a connection of its own, signed by nodemailer's). */
async function send(
  { server, mail: session }: Pick<Context, 'server' | 'mail'>,
  mail: Omit<OutgoingMail, 'messageId'>,
): Promise<string> {
  const messageId = `<${randomUUID()}@alice.example>`;
  sentAt.set(messageId, new Date(server.services.clock.now()));
  if (mail.dkim) await sendToService(server.smtpPort!, { ...mail, messageId });
  else await session.send({ ...mail, messageId });
  return messageId;
}

/** Signs up by mail through the door (the join address needs no alignment: a code answers). */
async function signUpByMail(context: Pick<Context, 'server' | 'mail'>): Promise<Context['agent']> {
  const { server } = context;
  const join = `join@${DOMAIN}`;
  const start = await send(context, {
    from: OWNER,
    to: join,
    subject: 'sign-up',
    text: 'name: forged-from-bot',
  });
  const [codeMail] = await answersTo(server, start);
  const code = /\b(\d{6})\b/.exec(codeMail?.text ?? '')?.[1];
  assert.ok(code, 'a code came back');
  const reply = await send(context, { from: OWNER, to: join, subject: 'Re: sign-up', text: code });
  const [done] = await answersTo(server, reply);
  const privateAddress = /private_address: (\S+)/.exec(done?.text ?? '')?.[1];
  const agentId = /agent_id: (\S+)/.exec(done?.text ?? '')?.[1];
  assert.ok(privateAddress && agentId, done?.text);
  return { agentId, privateAddress };
}

const takesBytes = (operation: Operation) =>
  resolveBinding(operation.method, operation.binding).body.kind === 'bytes';

/** Every mail command an ordinary agent may send (the operator's own are no command to it). */
const COMMANDS = OPERATION_LIST.filter((operation) => operation.operatorOnly !== true);
const WRITES = COMMANDS.filter((operation) => operation.readOnly !== true);
const READS = COMMANDS.filter((operation) => operation.readOnly === true);

/** Sends `operation` from OWNER, unsigned (as anyone can), with a body its schema takes. */
function forged(context: Context, operation: Operation) {
  return send(context, {
    from: OWNER,
    to: context.agent.privateAddress,
    subject: operation.name,
    text: stringify(validInput(operation)),
    ...(takesBytes(operation)
      ? { attachments: [{ filename: 'a.md', content: 'forged bytes\n' }] }
      : {}),
  });
}

test('every command that changes anything, from unaligned mail, is held for the confirmed address and never runs', async (context) => {
  const { server } = context;
  assert.ok(WRITES.length > 20, `${WRITES.length} commands write`);
  const wrong: string[] = [];
  let held = 0;
  const refused: string[] = [];
  for (const operation of WRITES) {
    const answers = await answersTo(server, await forged(context, operation));
    const [only] = answers;
    if (answers.length !== 1 || only!.recipient !== OWNER) {
      wrong.push(`${operation.name}: answered ${JSON.stringify(answers.map((a) => a.recipient))}`);
      continue;
    }
    if (takesBytes(operation)) {
      // A held command keeps no attachments: refused, and it says why.
      if (!/code: forbidden/.test(only!.text) || !/reason: sender_not_aligned/.test(only!.text))
        wrong.push(`${operation.name} (bytes): ${only!.text.slice(0, 200)}`);
      continue;
    }
    if (only!.kind === 'confirmation_request') {
      held++;
      if (!/Nothing has happened yet|nothing has happened yet/.test(only!.text))
        wrong.push(`${operation.name}: ${only!.text.slice(0, 200)}`);
    } else if (/code: (invalid_input|unknown_field|invalid_path)/.test(only!.text)) {
      refused.push(`${operation.name} ${/detail: (.*)/.exec(only!.text)?.[1] ?? ''}`);
    } else {
      // Only an input the door refuses before holding may answer otherwise: then nothing ran.
      wrong.push(`${operation.name} ran: ${only!.text.slice(0, 200)}`);
    }
  }
  assert.equal(wrong, []);
  // Every write had an input its schema takes, so each reached the hold, not a refusal.
  assert.equal(refused, [], 'no input was refused before the hold');
  assert.is(held, WRITES.filter((operation) => !takesBytes(operation)).length);
  const workspaces = await server.services
    .db()
    .query('select 1 from workspaces where owner_agent_id = $1', [context.agent.agentId]);
  assert.is(workspaces.length, 0, 'create_workspace did not run');
  const holds = await server.services
    .db()
    .query<{ operation: string }>(
      `select operation from mail_confirmations where agent_id = $1 and status = 'pending'`,
      [context.agent.agentId],
    );
  assert.is(holds.length, held, 'each held command waits for its confirmation');
});

test('every read from unaligned mail answers the confirmed address only', async (context) => {
  const { server } = context;
  assert.ok(READS.length > 10, `${READS.length} commands read`);
  const wrong: string[] = [];
  for (const operation of READS) {
    const answers = await answersTo(server, await forged(context, operation));
    if (answers.length !== 1 || answers[0]!.recipient !== OWNER || answers[0]!.kind !== 'answer')
      wrong.push(`${operation.name}: ${JSON.stringify(answers.map((a) => a.recipient))}`);
  }
  assert.equal(wrong, []);
  // The same From from another address is still no one's: nothing runs, nothing answers.
  const stranger = await send(context, {
    from: 'mallory@evil.example',
    to: context.agent.privateAddress,
    subject: 'whoami',
    text: '',
  });
  assert.equal(await answersTo(server, stranger), []);
});

test('the same command DKIM-signed by the sign-up domain (DMARC pass) runs at once', async (context) => {
  const { server, privateKey } = context;
  const messageId = await send(context, {
    from: OWNER,
    to: context.agent.privateAddress,
    subject: 'create_workspace',
    text: 'name: aligned',
    dkim: { domainName: 'alice.example', keySelector: 'mail', privateKey },
  });
  const [answer] = await answersTo(server, messageId);
  assert.is(answer?.recipient, OWNER);
  assert.is(answer?.kind, 'answer', answer?.text);
  assert.match(answer!.text, /workspace_id: /);
});

test.run();
