import { execFile } from 'node:child_process';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { startMailSink, type MailSink } from '../helpers/mail-sink.ts';
import { SWAKS, clientSuite } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const DOMAIN = 'mailgate.example';
const PERSON = 'person@people.example.com';

/**
 * swaks (Debian's), an SMTP client with no code in common with ours, as a person's only tool:
 * it signs up by email, confirms the code and sends a command to the private address; the
 * answers arrive through SMTP_URL at a second SMTP server standing in for the person's mailbox.
 */
const test = clientSuite<{ server: TestServer; sink: MailSink }>(
  'swaks signs up and sends commands through the mailgate',
  SWAKS,
);

test.before(async (context) => {
  context.sink = await startMailSink();
  context.server = await startTestServer({ mailDomain: DOMAIN, smtpUrl: context.sink.url });
});
test.after(async ({ server, sink }) => {
  await server.close();
  await sink.close();
});

/** Runs swaks without blocking the event loop (the door answers in this process). */
function swaks(port: number, ...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      'swaks',
      ['--timeout', '20', '--server', `127.0.0.1:${port}`, '--from', PERSON, ...args],
      (error, stdout, stderr) =>
        resolve({
          code: error ? Number((error as { code?: number }).code ?? 1) : 0,
          output: `${stdout}${stderr}`.slice(0, 4000),
        }),
    );
    child.stdin?.end();
  });
}

test('a person with only swaks signs up, confirms the code and reads whoami by mail', async ({
  server,
  sink,
}) => {
  const port = server.smtpPort!;
  const started = await swaks(
    port,
    '--to',
    `join@${DOMAIN}`,
    '--header',
    'Subject: sign-up',
    '--header',
    'Message-Id: <swaks-sign-up@people.example.com>',
    '--body',
    'name: swaks-only-bot',
  );
  assert.is(started.code, 0, started.output);
  const codeMail = await sink.waitFor(
    (mail) => mail.header('in-reply-to') === '<swaks-sign-up@people.example.com>',
    'with the sign-up code',
  );
  assert.equal(codeMail.envelope.to, [PERSON]);
  const code = /\b(\d{6})\b/.exec(codeMail.text)?.[1];
  assert.ok(code, codeMail.text);

  const confirmed = await swaks(
    port,
    '--to',
    `join@${DOMAIN}`,
    '--header',
    `Subject: Re: ${codeMail.subject}`,
    '--header',
    'Message-Id: <swaks-code@people.example.com>',
    '--header',
    `In-Reply-To: ${codeMail.messageId}`,
    '--body',
    code,
  );
  assert.is(confirmed.code, 0, confirmed.output);
  const welcome = await sink.waitFor(
    (mail) => mail.header('in-reply-to') === '<swaks-code@people.example.com>',
    'with the private address',
  );
  const address = /a-[a-z2-7]{32}@mailgate\.example/.exec(welcome.text)?.[0];
  assert.ok(address, welcome.text);

  const asked = await swaks(
    port,
    '--to',
    address,
    '--header',
    'Subject: whoami',
    '--header',
    'Message-Id: <swaks-whoami@people.example.com>',
    '--body',
    // An empty mapping: the input of a command that takes none (an empty --body makes swaks ask).
    '{}',
  );
  assert.is(asked.code, 0, asked.output);
  const answer = await sink.waitFor(
    (mail) => mail.header('in-reply-to') === '<swaks-whoami@people.example.com>',
    'answering whoami',
  );
  const whoami = parse(answer.text) as { name: string; service_version: string };
  assert.is(whoami.name, 'swaks-only-bot');
  assert.is(answer.subject, 'Re: whoami');
  assert.equal(answer.envelope.to, [PERSON]);
});

test.run();
