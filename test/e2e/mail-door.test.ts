import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createMailAccount } from '../../actors/email/accounts.ts';
import { inboundLog, STALE_DISPATCH_MS } from '../../actors/email/inbound-log.ts';
import type { InboundMail, MailRouter } from '../../server/email/inbound.ts';
import { startMailDoor, type MailDoor } from '../../server/email/door.ts';
import { sendToService } from '../helpers/mail-client.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SmtpSession } from '../helpers/smtp-session.ts';

const DOMAIN = 'agents.example';

/** What a router of the test's own was handed, in order. */
interface Handed {
  kind: 'join' | 'agent' | 'invite' | 'service';
  mail: InboundMail;
  target?: string;
}

interface Context {
  server: TestServer;
  /** The door's real code in front of a router that records what it is handed. */
  door: MailDoor;
  handed: Handed[];
  failNext: { error: Error | null };
}

const test = suite<Context>('the SMTP door: what it takes, what it refuses, what it hands on');

test.before(async (context) => {
  context.server = await startTestServer({ mailDomain: DOMAIN });
  context.handed = [];
  context.failNext = { error: null };
  const handed = context.handed;
  const failNext = context.failNext;
  const take = async (entry: Handed) => {
    handed.push(entry);
    const error = failNext.error;
    failNext.error = null;
    if (error) throw error;
  };
  const router: MailRouter = {
    join: (mail) => take({ kind: 'join', mail }),
    agent: (mail, agentId) => take({ kind: 'agent', mail, target: agentId }),
    invite: (mail, key) => take({ kind: 'invite', mail, target: key }),
    service: (mail) => take({ kind: 'service', mail }),
  };
  context.door = await startMailDoor(context.server.services, {
    host: '127.0.0.1',
    port: 0,
    router,
    log: () => undefined,
  });
});
test.after(async ({ server, door }) => {
  await door.close();
  await server.close();
});

/** A new agent that lives by email: its id and private address. */
async function mailAgent(server: TestServer, sender = 'person@people.example.com') {
  const agent = await server.signUp();
  const account = await createMailAccount(server.services.db(), server.services, {
    agentId: agent.agent_id,
    senderAddress: sender,
  });
  return { agentId: agent.agent_id, address: `${account.localPart}@${DOMAIN}` };
}

/** The door's record of a message (mail_inbound), by recipient, oldest first. */
async function recorded(server: TestServer, recipient: string) {
  return server.services
    .db()
    .query<{ message_id: string; outcome: string; auth: Record<string, unknown>; subject: string }>(
      `select message_id, outcome, auth, subject from mail_inbound where recipient = $1
       order by received_at`,
      [recipient],
    );
}

/** One message sent by hand (SmtpSession): the envelope as given, the message's lines as given. */
async function sendRaw(port: number, envelope: { from: string; to: string }, lines: string[]) {
  const { session } = await SmtpSession.open(port);
  try {
    await session.command('EHLO client.example');
    assert.is((await session.command(`MAIL FROM:<${envelope.from}>`)).code, 250);
    assert.is((await session.command(`RCPT TO:<${envelope.to}>`)).code, 250);
    assert.is((await session.command('DATA')).code, 354);
    return await session.command([...lines, '.'].join('\r\n'));
  } finally {
    session.close();
  }
}

let sequence = 0;
const uniqueId = () => `<door-test-${process.pid}-${++sequence}@people.example.com>`;

test('mail for the join address and for an agent private address is taken and handed on by kind', async ({
  server,
  door,
  handed,
}) => {
  const { agentId, address } = await mailAgent(server);
  const joinId = uniqueId();
  await sendToService(door.port, {
    from: 'Person <Person@People.Example.com>',
    to: `join@${DOMAIN}`,
    subject: 'Re: RE: Fwd: sign-up',
    text: 'name: mail-bot\n\nOn Tue, 25 Nov 2026 at 14:04, Service <service@agents.example> wrote:\n> old text\n',
    messageId: joinId,
  });
  const agentMessageId = uniqueId();
  await sendToService(door.port, {
    from: 'person@people.example.com',
    to: address,
    subject: 'whoami',
    text: '',
    messageId: agentMessageId,
    attachments: [{ filename: 'notes.txt', content: 'hello file', contentType: 'text/plain' }],
  });
  const join = handed.find((entry) => entry.mail.messageId === joinId)!;
  assert.is(join.kind, 'join');
  assert.is(join.mail.recipient, `join@${DOMAIN}`);
  assert.is(join.mail.from, 'person@people.example.com', 'the From address, lower-cased');
  assert.is(join.mail.envelopeFrom.toLowerCase(), 'person@people.example.com');
  assert.is(join.mail.subject, 'sign-up', 'Re:/Fwd: prefixes removed');
  assert.is(join.mail.text, 'name: mail-bot', 'the new text only');
  assert.is(join.mail.remoteIp, '127.0.0.1');
  assert.equal(Object.keys(join.mail.auth).sort(), ['aligned', 'dkim', 'dmarc', 'spf']);
  assert.is(join.mail.auth.aligned, false, 'unsigned mail is never aligned');
  const agent = handed.find((entry) => entry.mail.messageId === agentMessageId)!;
  assert.is(agent.kind, 'agent');
  assert.is(agent.target, agentId);
  assert.equal(
    agent.mail.attachments.map((each) => [each.filename, each.content.toString()]),
    [['notes.txt', 'hello file']],
  );
  const rows = await recorded(server, address);
  assert.equal(
    rows.map((row) => [row.message_id, row.outcome, row.subject]),
    [[`${agentMessageId} ${address}`, 'dispatched', 'whoami']],
  );
});

test('recipients that are not ours are refused at RCPT with 550: no open relay', async ({
  server,
  door,
}) => {
  const { address } = await mailAgent(server);
  const { session, greeting } = await SmtpSession.open(door.port);
  try {
    assert.is(greeting.code, 220);
    assert.is((await session.command('EHLO client.example')).code, 250);
    assert.is((await session.command('MAIL FROM:<person@people.example.com>')).code, 250);
    for (const stranger of [
      'someone@gmail.com', // another domain: relaying
      `join@sub.${DOMAIN}`,
      `nobody@${DOMAIN}`, // an unknown local part of ours
      `a-${'b'.repeat(32)}@${DOMAIN}`, // the shape of a private address that does not exist
      `invite-${'k'.repeat(32)}@${DOMAIN}`, // no such invite
      `${address.split('@')[0]}@other.example`, // a real local part at another domain
      `"join"@${DOMAIN}`,
    ]) {
      const reply = await session.command(`RCPT TO:<${stranger}>`);
      assert.is(reply.code, 550, `${stranger}: ${reply.text}`);
    }
    assert.is((await session.command(`RCPT TO:<${address.toUpperCase()}>`)).code, 250, 'any case');
    assert.is((await session.command(`RCPT TO:<join@${DOMAIN}>`)).code, 250);
  } finally {
    session.close();
  }
});

test('an address with a line break in it is a protocol error: refused, and nothing is taken', async ({
  server,
  door,
}) => {
  const { address } = await mailAgent(server);
  const { session } = await SmtpSession.open(door.port);
  try {
    await session.command('EHLO client.example');
    await session.command('MAIL FROM:<person@people.example.com>');
    // CRLF inside the brackets: the line ends there; the rest is a line of its own.
    const broken = await session.command(`RCPT TO:<${address}\r\nBcc: victim@gmail.com>`);
    assert.ok(broken.code >= 500, `the cut address: ${broken.text}`);
    const rest = await session.reply();
    assert.ok(rest.code >= 500, `the rest as a command: ${rest.text}`);
    // A bare LF inside the brackets: one line holding a break, never an address.
    const bareLf = await session.command(`RCPT TO:<join@${DOMAIN}\nRCPT TO:<victim@gmail.com>`);
    assert.ok(bareLf.code >= 500, `bare LF: ${bareLf.text}`);
    // With no recipient taken there is nothing to send.
    const data = await session.command('DATA');
    assert.ok(data.code >= 500, `DATA without a recipient: ${data.text}`);
  } finally {
    session.close();
  }
  assert.equal(await recorded(server, address), []);
});

test('a From or Subject that decodes to a line break hands on no header to inject', async ({
  door,
  handed,
}) => {
  const id = uniqueId();
  const crlf = (text: string) => `=?utf-8?B?${Buffer.from(text).toString('base64')}?=`;
  const subject = await sendRaw(
    door.port,
    { from: 'person@people.example.com', to: `join@${DOMAIN}` },
    [
      'From: person@people.example.com',
      `Subject: ${crlf('sign-up\r\nBcc: victim@gmail.com')}`,
      `Message-ID: ${id}`,
      '',
      'name: x',
    ],
  );
  assert.is(subject.code, 250);
  const mail = handed.find((entry) => entry.mail.messageId === id)!.mail;
  assert.not.match(mail.subject, /[\r\n]/);
  assert.is(mail.subject, 'sign-up Bcc: victim@gmail.com');

  const forged = uniqueId();
  const from = await sendRaw(
    door.port,
    { from: 'person@people.example.com', to: `join@${DOMAIN}` },
    [
      `From: ${crlf('victim@gmail.com\r\nBcc: other@gmail.com')} <person@people.example.com>`,
      'From: second@people.example.com',
      'Subject: sign-up',
      `Message-ID: ${forged}`,
      '',
      'name: x',
    ],
  );
  assert.is(from.code, 250);
  const twoFroms = handed.find((entry) => entry.mail.messageId === forged)!.mail;
  assert.is(twoFroms.from, null, 'two From addresses: no From is trusted');
});

test('the 11th recipient of one message is refused (452) and the ten are taken', async ({
  server,
  door,
  handed,
}) => {
  const agents = [];
  for (let index = 0; index < 11; index++) agents.push(await mailAgent(server));
  const id = uniqueId();
  const { session } = await SmtpSession.open(door.port);
  try {
    await session.command('EHLO client.example');
    await session.command('MAIL FROM:<person@people.example.com>');
    for (const { address } of agents.slice(0, 10))
      assert.is((await session.command(`RCPT TO:<${address}>`)).code, 250);
    const eleventh = await session.command(`RCPT TO:<${agents[10]!.address}>`);
    assert.is(eleventh.code, 452, eleventh.text);
    assert.is((await session.command('DATA')).code, 354);
    const message = `From: person@people.example.com\r\nSubject: whoami\r\nMessage-ID: ${id}\r\n\r\n\r\n.`;
    assert.is((await session.command(message)).code, 250);
  } finally {
    session.close();
  }
  assert.equal(
    handed.filter((entry) => entry.mail.messageId === id).map((entry) => entry.target),
    agents.slice(0, 10).map((agent) => agent.agentId),
  );
  assert.equal(await recorded(server, agents[10]!.address), []);
});

test('a retried delivery (the same Message-ID) is handed on once; another recipient gets its own', async ({
  server,
  door,
  handed,
}) => {
  const { address } = await mailAgent(server);
  const id = uniqueId();
  const mail = { from: 'person@people.example.com', subject: 'whoami', text: '', messageId: id };
  for (let attempt = 0; attempt < 3; attempt++) {
    const { response } = await sendToService(door.port, { ...mail, to: address });
    assert.match(response, /^250/, 'a repeat is answered 250: the sender must stop retrying');
  }
  // Through the service's own door too: the same record, so still nothing runs again.
  await sendToService(server.smtpPort!, { ...mail, to: address });
  assert.is(handed.filter((entry) => entry.mail.messageId === id).length, 1);
  assert.is((await recorded(server, address)).length, 1);
  await sendToService(door.port, { ...mail, to: `join@${DOMAIN}` });
  assert.equal(
    handed.filter((entry) => entry.mail.messageId === id).map((entry) => entry.kind),
    ['agent', 'join'],
  );
});

test('a message left dispatching by a process that stopped half-way runs when its sender retries; a recent one does not', async ({
  server,
  door,
  handed,
}) => {
  const { address } = await mailAgent(server);
  const stale = uniqueId();
  const recent = uniqueId();
  const now = Date.now();
  // What a process that died mid-dispatch leaves: its row, `dispatching`, and no 250 sent.
  for (const [id, receivedAt] of [
    [stale, now - STALE_DISPATCH_MS - 60_000],
    [recent, now - 60_000],
  ] as const) {
    await inboundLog.record(server.services, {
      key: `${id} ${address}`,
      receivedAt: new Date(receivedAt),
      recipient: address,
      fromAddress: 'person@people.example.com',
      envelopeFrom: 'person@people.example.com',
      remoteIp: '127.0.0.1',
      auth: { spf: 'none', dkim: 'none', dmarc: 'none', aligned: false },
      agentId: null,
      subject: 'whoami',
      outcome: 'dispatching',
    });
  }
  for (const id of [stale, recent]) {
    const { response } = await sendToService(door.port, {
      from: 'person@people.example.com',
      to: address,
      subject: 'whoami',
      text: '',
      messageId: id,
    });
    assert.match(response, /^250/);
  }
  assert.is(handed.filter((entry) => entry.mail.messageId === stale).length, 1, 'taken over');
  assert.is(handed.filter((entry) => entry.mail.messageId === recent).length, 0, 'still running');
  const rows = await recorded(server, address);
  assert.equal(Object.fromEntries(rows.map((row) => [row.message_id.split(' ')[0], row.outcome])), {
    [stale]: 'dispatched',
    [recent]: 'dispatching',
  });
});

test('a message without a Message-ID is known by its bytes: its retry runs nothing', async ({
  door,
  handed,
}) => {
  const send = async () => {
    const { session } = await SmtpSession.open(door.port);
    try {
      await session.command('EHLO client.example');
      await session.command('MAIL FROM:<person@people.example.com>');
      await session.command(`RCPT TO:<join@${DOMAIN}>`);
      await session.command('DATA');
      const reply = await session.command(
        'From: person@people.example.com\r\nSubject: sign-up\r\n\r\nname: no-id-bot\r\n.',
      );
      assert.is(reply.code, 250);
    } finally {
      session.close();
    }
  };
  await send();
  await send();
  const taken = handed.filter((entry) => entry.mail.text === 'name: no-id-bot');
  assert.is(taken.length, 1);
  assert.match(taken[0]!.mail.messageId, /^<[0-9a-f]{64}@message-hash\.invalid>$/);
});

test('automatic mail is recorded and never handed on (auto-replies, bulk, bounces, our own)', async ({
  server,
  door,
  handed,
}) => {
  const { address } = await mailAgent(server);
  const cases: { what: string; headers?: Record<string, string>; from?: string }[] = [
    { what: 'Auto-Submitted: auto-replied', headers: { 'Auto-Submitted': 'auto-replied' } },
    { what: 'Auto-Submitted: auto-generated', headers: { 'Auto-Submitted': 'auto-generated' } },
    { what: 'Precedence: bulk', headers: { Precedence: 'bulk' } },
    { what: 'Precedence: auto_reply', headers: { Precedence: 'auto_reply' } },
    { what: 'X-Autoreply', headers: { 'X-Autoreply': 'yes' } },
    { what: 'a mailing list', headers: { 'List-Id': '<people.lists.example.com>' } },
    { what: "the service's own address", from: `service@${DOMAIN}` },
  ];
  const ids: string[] = [];
  for (const each of cases) {
    const id = uniqueId();
    ids.push(id);
    const { response } = await sendToService(door.port, {
      from: each.from ?? 'person@people.example.com',
      to: address,
      subject: 'whoami',
      text: 'I am away until Monday.',
      messageId: id,
      ...(each.headers ? { headers: each.headers } : {}),
    });
    assert.match(response, /^250/, each.what);
  }
  assert.equal(
    handed
      .filter((entry) => ids.includes(entry.mail.messageId))
      .map((entry) => cases[ids.indexOf(entry.mail.messageId)]!.what),
    [],
    'none handed on',
  );
  const bounce = uniqueId();
  const bounced = await sendRaw(door.port, { from: '', to: address }, [
    'From: mailer-daemon@people.example.com',
    'Subject: Undelivered Mail Returned to Sender',
    `Message-ID: ${bounce}`,
    '',
    'whoami',
  ]);
  assert.is(bounced.code, 250, 'the null sender (a bounce)');
  assert.is(handed.filter((entry) => entry.mail.messageId === bounce).length, 0);
  const rows = await recorded(server, address);
  assert.is(rows.length, cases.length + 1, 'each one recorded');
  assert.ok(rows.every((row) => row.outcome === 'automatic'));
  // Auto-Submitted: no is a person's mail.
  const person = uniqueId();
  await sendToService(door.port, {
    from: 'person@people.example.com',
    to: address,
    subject: 'whoami',
    text: '',
    messageId: person,
    headers: { 'Auto-Submitted': 'no' },
  });
  assert.is(handed.filter((entry) => entry.mail.messageId === person).length, 1);
});

test('a router failure of ours is recorded as failed and answered 250: the sender does not loop', async ({
  server,
  door,
  handed,
  failNext,
}) => {
  const { address } = await mailAgent(server);
  const id = uniqueId();
  failNext.error = new Error('a bug in a command');
  const mail = {
    from: 'person@people.example.com',
    to: address,
    subject: 'whoami',
    text: '',
    messageId: id,
  };
  assert.match((await sendToService(door.port, mail)).response, /^250/);
  assert.equal(
    (await recorded(server, address)).map((row) => row.outcome),
    ['failed'],
  );
  await sendToService(door.port, mail);
  assert.is(handed.filter((entry) => entry.mail.messageId === id).length, 1, 'not run again');
});

test('one client address past its messages a minute is told to try later (451) at MAIL FROM', async ({
  server,
}) => {
  const limited = await startMailDoor(server.services, {
    host: '127.0.0.1',
    port: 0,
    router: {
      join: async () => undefined,
      agent: async () => undefined,
      invite: async () => undefined,
      service: async () => undefined,
    },
    log: () => undefined,
    messagesPerMinute: 2,
  });
  const { session } = await SmtpSession.open(limited.port);
  try {
    await session.command('EHLO client.example');
    for (let message = 0; message < 2; message++) {
      assert.is((await session.command('MAIL FROM:<person@people.example.com>')).code, 250);
      assert.is((await session.command('RSET')).code, 250);
    }
    const third = await session.command('MAIL FROM:<person@people.example.com>');
    assert.is(third.code, 451, third.text);
    assert.match(third.text, /try again in \d+ s/);
  } finally {
    session.close();
    await limited.close();
  }
});

test('AUTH and STARTTLS are not offered; the size limit is announced', async ({ door }) => {
  const { session } = await SmtpSession.open(door.port);
  try {
    const ehlo = await session.command('EHLO client.example');
    assert.not.match(ehlo.text, /STARTTLS|AUTH/);
    assert.match(ehlo.text, /SIZE 26214400/);
    assert.ok((await session.command('STARTTLS')).code >= 500);
    assert.ok((await session.command('AUTH PLAIN AGFAYg==')).code >= 500);
  } finally {
    session.close();
  }
});

test.run();
