import { randomUUID } from 'node:crypto';
import { simpleParser, type ParsedMail } from 'mailparser';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { createMailAccount } from '../../actors/email/accounts.ts';
import type { InboundMail } from '../../server/email/inbound.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { mailRouter } from '../../server/email/mailgate.ts';
import { dealRoom } from '../helpers/deals.ts';
import { callJson } from '../helpers/http.ts';
import { addKey, newKey, signedJson } from '../helpers/signatures.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The mailgate's router (server/email/mailgate.ts) as the SMTP door calls it, with checked mail
 * built as the door builds it; answers are read from the outbox, where every message leaves.
 */
interface Context {
  server: TestServer;
  router: ReturnType<typeof mailRouter>;
  logs: string[];
}

const test = suite<Context>('the mailgate runs commands sent by email and answers them by email');

test.before(async (context) => {
  context.server = await startTestServer({ mailDomain: 'mail.test', mailSignUpLimitPerHour: 5 });
  context.logs = [];
  context.router = mailRouter(context.server.services, (line) => context.logs.push(line));
});
test.after(async ({ server }) => {
  await server.close();
});

const DOMAIN = 'mail.test';
const JOIN = `join@${DOMAIN}`;

function inbound(
  mail: Partial<InboundMail> & { from: string | null; recipient: string },
): InboundMail {
  return {
    messageId: `<${randomUUID()}@sender.example>`,
    envelopeFrom: mail.from ?? '',
    remoteIp: '127.0.0.1',
    subject: '',
    text: '',
    inReplyTo: null,
    references: [],
    attachments: [],
    auth: { spf: 'none', dkim: 'none', dmarc: 'none', aligned: false },
    ...mail,
  };
}

interface Queued {
  recipient: string;
  kind: string;
  parsed: ParsedMail;
  raw: string;
}

/** Every message queued so far, oldest first. */
async function outbox(server: TestServer): Promise<Queued[]> {
  const rows = await server.services
    .db()
    .query<{ recipient: string; kind: string; raw: Uint8Array }>(
      'select recipient, kind, raw from mail_outbox order by created_at, mail_id',
    );
  return Promise.all(
    rows.map(async (row) => {
      const raw = Buffer.from(row.raw);
      const parsed = await simpleParser(raw);
      return {
        recipient: row.recipient,
        kind: row.kind,
        parsed,
        raw: raw.toString('utf8'),
      };
    }),
  );
}

/** The answers to one message (by In-Reply-To). */
async function answersTo(server: TestServer, mail: InboundMail): Promise<Queued[]> {
  return (await outbox(server)).filter((queued) => queued.parsed.inReplyTo === mail.messageId);
}

async function onlyAnswerTo(server: TestServer, mail: InboundMail): Promise<Queued> {
  const answers = await answersTo(server, mail);
  assert.is(answers.length, 1, `one answer to ${mail.subject}`);
  return answers[0]!;
}

/** Signs up by email from `sender`; answers the private address and the agent's token. */
async function signUpByMail(context: Context, sender: string, name: string) {
  const { server, router } = context;
  const start = inbound({
    from: sender,
    recipient: JOIN,
    subject: 'sign-up',
    text: `name: ${name}`,
  });
  await router.join(start);
  const codeMail = await onlyAnswerTo(server, start);
  const code = /\b(\d{6})\b/.exec(codeMail.parsed.text ?? '')?.[1];
  assert.ok(code, 'the answer carries a 6-digit code');
  const reply = inbound({
    from: sender,
    recipient: JOIN,
    subject: 'Your sign-up code',
    text: code,
    inReplyTo: codeMail.parsed.messageId ?? null,
  });
  await router.join(reply);
  const done = await onlyAnswerTo(server, reply);
  const yamlPart = (done.parsed.text ?? '').slice(
    (done.parsed.text ?? '').indexOf('private_address'),
  );
  const answer = parse(yamlPart) as {
    private_address: string;
    agent_id: string;
    api_token: string;
  };
  return { ...answer, code, codeMail, reply };
}

test('a sign-up by email mails a code to the sender, and the reply with it gives the private address', async (context) => {
  const { server, router } = context;
  const signedUp = await signUpByMail(context, 'ada@person.example', 'ada-mail-bot');
  assert.is(signedUp.codeMail.recipient, 'ada@person.example');
  assert.match(signedUp.private_address, /^a-[a-z2-7]{32}@mail\.test$/);
  const me = await server.get('/whoami', signedUp.api_token);
  assert.is(me.status, 200);
  assert.is(((await me.json()) as { agent_id: string }).agent_id, signedUp.agent_id);
  // The same code again (a replayed reply) signs nobody up a second time and gets no answer.
  const again = inbound({ from: 'ada@person.example', recipient: JOIN, text: signedUp.code });
  await router.join(again);
  assert.is((await answersTo(server, again)).length, 0);
});

test('five wrong codes void a sign-up: the right one does nothing after', async (context) => {
  const { server, router } = context;
  const sender = 'wrong@person.example';
  const start = inbound({
    from: sender,
    recipient: JOIN,
    subject: 'sign-up',
    text: 'name: wrong-codes-bot',
  });
  await router.join(start);
  const code = /\b(\d{6})\b/.exec((await onlyAnswerTo(server, start)).parsed.text ?? '')![1]!;
  const wrong = code === '000000' ? '111111' : '000000';
  for (let i = 0; i < 5; i++) {
    await router.join(inbound({ from: sender, recipient: JOIN, text: wrong }));
  }
  const right = inbound({ from: sender, recipient: JOIN, text: code });
  await router.join(right);
  assert.is((await answersTo(server, right)).length, 0, 'a voided sign-up answers nothing');
  const accounts = await server.services
    .db()
    .query('select 1 from mail_accounts where sender_address = $1', [sender]);
  assert.is(accounts.length, 0);
});

test('a flood of sign-ups from one address gets five codes, one refusal, then silence', async (context) => {
  const { server, router } = context;
  const sender = 'flood@person.example';
  const kinds: string[] = [];
  for (let i = 0; i < 9; i++) {
    const mail = inbound({
      from: sender,
      recipient: JOIN,
      subject: 'sign-up',
      text: `name: flood-${i}`,
    });
    await router.join(mail);
    kinds.push(...(await answersTo(server, mail)).map((answer) => answer.kind));
  }
  assert.equal(kinds, [
    'sign_up_code',
    'sign_up_code',
    'sign_up_code',
    'sign_up_code',
    'sign_up_code',
    'sign_up_refused',
  ]);
});

test('a command is answered as YAML, threaded, to the sign-up address only, marked automatic', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'cmd@person.example', 'cmd-mail-bot');
  const mail = inbound({
    from: 'cmd@person.example',
    recipient: me.private_address,
    subject: 'whoami',
    references: ['<earlier@sender.example>'],
  });
  await router.agent(mail, me.agent_id);
  const answer = await onlyAnswerTo(server, mail);
  assert.is(answer.recipient, 'cmd@person.example');
  assert.is(answer.parsed.subject, 'Re: whoami');
  assert.ok(answer.raw.includes('Auto-Submitted: auto-replied'));
  assert.ok(String(answer.parsed.references).includes('<earlier@sender.example>'));
  const body = parse(answer.parsed.text ?? '') as { agent_id: string; name: string };
  assert.is(body.agent_id, me.agent_id);
  assert.is(body.name, 'cmd-mail-bot');
});

test('malformed YAML, an unknown command and a refused input answer problems with their codes', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'bad@person.example', 'bad-input-bot');
  const send = async (subject: string, text: string) => {
    const mail = inbound({
      from: 'bad@person.example',
      recipient: me.private_address,
      subject,
      text,
    });
    await router.agent(mail, me.agent_id);
    return (await onlyAnswerTo(server, mail)).parsed.text ?? '';
  };
  const badYaml = parse(await send('leave_feedback', 'message: [unclosed\ncategory: bug')) as {
    code: string;
  };
  assert.is(badYaml.code, 'invalid_yaml');
  const notAMapping = parse(await send('leave_feedback', '- a list')) as { code: string };
  assert.is(notAMapping.code, 'invalid_yaml');
  const bomb = await send(
    'leave_feedback',
    [
      'a: &a [x, x, x, x, x, x, x, x, x]',
      ...Array.from({ length: 60 }, (_, i) => `b${i}: *a`),
    ].join('\n'),
  );
  assert.match(bomb, /code: invalid_yaml/);
  const unknown = await send('make_me_operator', '');
  assert.match(unknown, /code: unknown_command/);
  assert.match(unknown, /whoami:/, 'the command list follows');
  const operatorOnly = await send('answer_feedback', `feedback_id: ${randomUUID()}\nanswer: x`);
  assert.match(
    operatorOnly,
    /code: unknown_command/,
    'operator-only commands do not exist for others',
  );
  const help = await send('help', '');
  assert.ok(!help.includes('unknown_command'));
  assert.match(help, /agree \(always confirmed by reply\)/);
  assert.match(help, /create_workspace \(confirmed by reply unless your mail passes DMARC\)/);
  assert.match(help, /\nwhoami: /, 'a read is never held');
  const unknownField = parse(await send('whoami', 'extra: 1')) as { code: string };
  assert.is(unknownField.code, 'unknown_field');
  const nul = parse(await send('leave_feedback', 'message: "a\\0b"\ncategory: bug')) as {
    code: string;
  };
  assert.is(nul.code, 'invalid_input');
});

test('mail with a forged From on a private address runs nothing and answers nobody', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'owner@person.example', 'forged-from-bot');
  const before = (await outbox(server)).length;
  const forged = inbound({
    from: 'stranger@evil.example',
    recipient: me.private_address,
    subject: 'leave_feedback',
    text: 'message: written by a stranger\ncategory: other',
  });
  await router.agent(forged, me.agent_id);
  const binding = inbound({
    from: 'stranger@evil.example',
    recipient: me.private_address,
    subject: 'rate',
    text: `deal_id: ${randomUUID()}\nagent_id: ${randomUUID()}\ndelivered_can: true\naccepted_on_need: true`,
  });
  await router.agent(binding, me.agent_id);
  assert.is((await outbox(server)).length, before, 'nothing was queued, to anyone');
  const feedback = await server.services
    .db()
    .query(`select 1 from feedback where message = 'written by a stranger'`);
  assert.is(feedback.length, 0, 'nothing ran');
  const held = await server.services
    .db()
    .query('select 1 from mail_confirmations where agent_id = $1', [me.agent_id]);
  assert.is(held.length, 0, 'no binding command was held');
});

test('header injection in a subject and in YAML values leaves the answer headers ours', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'inject@person.example', 'inject-bot');
  const mail = inbound({
    from: 'inject@person.example',
    recipient: me.private_address,
    subject: 'whoami\r\nBcc: victim@evil.example\r\nX-Injected: yes',
  });
  await router.agent(mail, me.agent_id);
  const feedback = inbound({
    from: 'inject@person.example',
    recipient: me.private_address,
    subject: 'leave_feedback',
    text: 'message: "x\\r\\nBcc: victim@evil.example\\r\\n\\r\\nbody"\ncategory: other',
  });
  await router.agent(feedback, me.agent_id);
  for (const answer of [
    ...(await answersTo(server, mail)),
    ...(await answersTo(server, feedback)),
  ]) {
    const head = answer.raw.split('\r\n\r\n')[0]!;
    assert.not.match(head, /^Bcc:/im);
    assert.not.match(head, /^X-Injected:/im);
    assert.is(answer.recipient, 'inject@person.example');
    assert.equal(answer.parsed.bcc, undefined);
  }
});

test('a binding command waits for an aligned reply, runs once, and a replay answers already done', async (context) => {
  const { server, router } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const party = agents[0]!;
  const account = await createMailAccount(server.services.db(), server.services, {
    agentId: party.agent_id,
    senderAddress: 'party@person.example',
  });
  const address = `${account.localPart}@${DOMAIN}`;
  const command = inbound({
    from: 'party@person.example',
    recipient: address,
    subject: 'agree',
    text: `workspace_id: ${workspaceId}\npath: deal.md\nversion: ${at.version}\nsha256: ${at.sha256}`,
  });
  await router.agent(command, party.agent_id);
  const request = await onlyAnswerTo(server, command);
  assert.is(request.kind, 'confirmation_request');
  assert.match(request.parsed.text ?? '', /nothing has happened yet/);
  const agreements = () =>
    server.services
      .db()
      .query('select 1 from deal_agreements where agent_id = $1', [party.agent_id]);
  assert.is((await agreements()).length, 0, 'nothing ran from one email');

  // Unaligned (SPF/DKIM of another domain, or none): a fresh link, nothing runs.
  const unaligned = inbound({
    from: 'party@person.example',
    recipient: address,
    subject: 'agree',
    text: 'yes',
    inReplyTo: request.parsed.messageId!,
  });
  await router.agent(unaligned, party.agent_id);
  const linkAnswer = (await onlyAnswerTo(server, unaligned)).parsed.text ?? '';
  assert.match(linkAnswer, /NOT carried out/);
  const link = /(http:\/\/\S+\/mailgate\/confirm\?token=\S+)/.exec(linkAnswer)?.[1];
  assert.ok(link, 'the answer gives the link');
  assert.is((await agreements()).length, 0);

  const aligned = inbound({
    ...unaligned,
    messageId: `<${randomUUID()}@sender.example>`,
    auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass', aligned: true },
  });
  await router.agent(aligned, party.agent_id);
  const done = parse((await onlyAnswerTo(server, aligned)).parsed.text ?? '') as {
    already_done: boolean;
    answer: { deal_id: string };
  };
  assert.is(done.already_done, false);
  assert.ok(done.answer.deal_id, JSON.stringify(done));
  assert.is((await agreements()).length, 1);

  const replayed = inbound({ ...aligned, messageId: `<${randomUUID()}@sender.example>` });
  await router.agent(replayed, party.agent_id);
  const again = parse((await onlyAnswerTo(server, replayed)).parsed.text ?? '') as {
    already_done: boolean;
    answer: { deal_id: string };
  };
  assert.is(again.already_done, true);
  assert.is(again.answer.deal_id, done.answer.deal_id);
  // The link, too, finds it done.
  const byLink = await fetch(link, { method: 'POST' });
  assert.is(byLink.status, 200);
  assert.is(((await byLink.json()) as { already_done: boolean }).already_done, true);
  assert.is((await agreements()).length, 1, 'carried out once');
});

test('a binding command is carried out by its link once; an unknown token is 404', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'link@person.example', 'link-bot');
  const command = inbound({
    from: 'link@person.example',
    recipient: me.private_address,
    subject: 'rate',
    text: `deal_id: ${randomUUID()}\nagent_id: ${randomUUID()}\ndelivered_can: true\naccepted_on_need: true`,
  });
  await router.agent(command, me.agent_id);
  const text = (await onlyAnswerTo(server, command)).parsed.text ?? '';
  const link = /(http:\/\/\S+\/mailgate\/confirm\?token=\S+)/.exec(text)![1]!;
  // Opening the link (a person, or a mail scanner) runs nothing: a page with one button.
  const token = new URL(link).searchParams.get('token')!;
  const shown = await server.get(`/mailgate/confirm?token=${token}`);
  assert.is(shown.status, 200);
  assert.equal(((await shown.json()) as { operation: string; status: string }).status, 'pending');
  const pageAnswer = await fetch(link, { headers: { accept: 'text/html' } });
  const page = await pageAnswer.text();
  assert.match(pageAnswer.headers.get('content-type') ?? '', /text\/html/);
  assert.match(page, /<form method="post" action="\/mailgate\/confirm\?token=/);
  const first = (await (await fetch(link, { method: 'POST' })).json()) as {
    already_done: boolean;
    answer: { code: string };
  };
  assert.is(first.already_done, false);
  assert.is(first.answer.code, 'not_found', 'the command ran (and was refused: no such deal)');
  const second = (await (await fetch(link, { method: 'POST' })).json()) as {
    already_done: boolean;
  };
  assert.is(second.already_done, true);
  const unknown = await fetch(server.url('/mailgate/confirm?token=nope'), { method: 'POST' });
  assert.is(unknown.status, 404);
});

test('attachments become files in the named workspace, and read_file answers with the file attached', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'files@person.example', 'files-bot');
  const send = async (mail: Partial<InboundMail>) => {
    // Aligned (DMARC pass): commands that change anything run at once only from such mail.
    const full = inbound({
      from: 'files@person.example',
      recipient: me.private_address,
      auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass', aligned: true },
      ...mail,
    });
    await router.agent(full, me.agent_id);
    return onlyAnswerTo(server, full);
  };
  const created = parse(
    (await send({ subject: 'create_workspace', text: 'name: mail-files' })).parsed.text ?? '',
  ) as { workspace_id: string };
  assert.ok(created.workspace_id, JSON.stringify(created));
  const saved = await send({
    subject: 'write_file',
    text: `workspace_id: ${created.workspace_id}\npath: notes/hello.txt`,
    attachments: [
      { filename: 'ignored.txt', contentType: 'text/plain', content: Buffer.from('hello by mail') },
    ],
  });
  assert.match(saved.parsed.text ?? '', /version: 1/);
  const several = await send({
    subject: 'write_file',
    text: `workspace_id: ${created.workspace_id}\npath: inbox/`,
    attachments: [
      { filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('A') },
      {
        filename: 'b.bin',
        contentType: 'application/octet-stream',
        content: Buffer.from([0, 1, 2]),
      },
    ],
  });
  assert.match(several.parsed.text ?? '', /inbox\/a\.txt/);
  assert.match(several.parsed.text ?? '', /inbox\/b\.bin/);
  const read = await send({
    subject: 'read_file',
    text: `workspace_id: ${created.workspace_id}\npath: notes/hello.txt`,
  });
  assert.is(read.parsed.attachments.length, 1);
  assert.is(read.parsed.attachments[0]!.content.toString(), 'hello by mail');
  assert.is(read.parsed.attachments[0]!.filename, 'hello.txt');
});

test('set_mail_push mails each new change once, as it happens, and refuses an agent without a mail account', async (context) => {
  const { server } = context;
  const me = await signUpByMail(context, 'push@person.example', 'push-bot');
  const feedback = (message: string) =>
    server.post('/feedback', { message, category: 'question' }, me.api_token);
  assert.is((await feedback('before pushing')).status, 202);
  const on = await server.post('/mailgate/push', { push: true }, me.api_token);
  assert.is(on.status, 200);
  assert.equal(await on.json(), { push: true });
  assert.is((await feedback('while pushing')).status, 202);
  await server.services.mailPush!.idle();
  const pushed = (await outbox(server)).filter(
    (mail) => mail.kind === 'change' && mail.recipient === 'push@person.example',
  );
  assert.is(pushed.length, 1, 'only the change after switching on');
  assert.is(pushed[0]!.parsed.subject, 'change: feedback.received');
  const event = parse(pushed[0]!.parsed.text ?? '') as { event_id: string; type: string };
  assert.is(pushed[0]!.parsed.messageId, `<change-${event.event_id}@${DOMAIN}>`);
  // Switched off: nothing more.
  assert.is((await server.post('/mailgate/push', { push: false }, me.api_token)).status, 200);
  assert.is((await feedback('after pushing')).status, 202);
  await server.services.mailPush!.idle();
  const after = (await outbox(server)).filter((mail) => mail.kind === 'change');
  assert.is(after.length, 1);
  const plain = await server.signUp();
  const refused = await server.post('/mailgate/push', { push: true }, plain.api_token);
  assert.is(refused.status, 409);
  assert.is(((await refused.json()) as { code: string }).code, 'no_mail_account');
});

test('a binding command whose input cannot run is refused at once and nothing waits', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'badbind@person.example', 'bad-bind-bot');
  const mail = inbound({
    from: 'badbind@person.example',
    recipient: me.private_address,
    subject: 'agree',
    text: 'workspace_id: not-a-uuid\npath: deal.md\nversion: one\nsha256: x',
  });
  await router.agent(mail, me.agent_id);
  const body = parse((await onlyAnswerTo(server, mail)).parsed.text ?? '') as { code: string };
  assert.is(body.code, 'invalid_input');
  const held = await server.services
    .db()
    .query('select 1 from mail_confirmations where agent_id = $1', [me.agent_id]);
  assert.is(held.length, 0);
});

test('under the signature policy mail still acts for the agent, and key commands always wait for a confirmation: the way back in', async (context) => {
  const { server, router } = context;
  const me = await signUpByMail(context, 'keys@person.example', 'keys-bot');
  const key = newKey();
  await addKey(server, me.api_token, key);
  const set = await signedJson(server, key, 'PUT', '/whoami/signature-policy', me.api_token, {
    require_signature: true,
  });
  assert.is(set.status, 200, JSON.stringify(set.body));
  const aligned = { spf: 'pass', dkim: 'pass', dmarc: 'pass', aligned: true } as const;
  // A write that binds nothing runs at once from aligned mail: mail is proven by mail, not a token.
  const made = inbound({
    from: 'keys@person.example',
    recipient: me.private_address,
    subject: 'create_workspace',
    text: 'name: by mail',
    auth: aligned,
  });
  await router.agent(made, me.agent_id);
  assert.match((await onlyAnswerTo(server, made)).parsed.text ?? '', /workspace_id/);
  // The policy itself is held for a reply, even from aligned mail: one email cannot change it.
  const off = inbound({
    from: 'keys@person.example',
    recipient: me.private_address,
    subject: 'set_signature_policy',
    text: 'require_signature: false',
    auth: aligned,
  });
  await router.agent(off, me.agent_id);
  const request = await onlyAnswerTo(server, off);
  assert.is(request.kind, 'confirmation_request');
  const policy = async () =>
    (await callJson<{ require_signature: boolean }>(server, 'GET', '/whoami/keys', me.api_token))
      .body.require_signature;
  assert.is(await policy(), true, 'nothing ran from one email');
  const confirmed = inbound({
    from: 'keys@person.example',
    recipient: me.private_address,
    subject: 'Re: set_signature_policy',
    text: 'yes',
    inReplyTo: request.parsed.messageId!,
    auth: aligned,
  });
  await router.agent(confirmed, me.agent_id);
  const done = parse((await onlyAnswerTo(server, confirmed)).parsed.text ?? '') as {
    answer: { require_signature: boolean };
  };
  assert.is(done.answer.require_signature, false, JSON.stringify(done));
  assert.is(await policy(), false);
});

test('/mailgate/protocol lists every command from the operation table, marked by when it is held', async ({
  server,
}) => {
  const text = await (await server.get('/mailgate/protocol')).text();
  assert.not.match(text, /\{command_table\}/);
  assert.not.match(text, /not available yet/i);
  for (const operation of OPERATION_LIST) {
    const row = text.split('\n').find((line) => line.startsWith(`| \`${operation.name}\` |`));
    if (operation.operatorOnly) assert.is(row, undefined, `${operation.name} is not listed`);
    else {
      assert.ok(row, `${operation.name} is listed`);
      const held = operation.binds ? 'always' : operation.readOnly ? 'no' : 'unless aligned';
      assert.ok(row.endsWith(`| ${held} |`), row);
    }
  }
});

test.run();
