import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { connectMcp } from '../helpers/clients.ts';
import { TestClock } from '../helpers/clock.ts';
import { startMailSink, type MailSink, type SunkMail } from '../helpers/mail-sink.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Notification email (issue 21, part 2): the person's address is confirmed by the code or the
 * link of the email that reaches their mailbox (a second SMTP server), five wrong codes void
 * it, and every email unsubscribes without a token.
 */

interface Context {
  server: TestServer;
  sink: MailSink;
  clock: TestClock;
}

const test = suite<Context>('notification email: confirming and unsubscribing');

test.before(async (context) => {
  context.clock = new TestClock();
  context.sink = await startMailSink();
  context.server = await startTestServer({ smtpUrl: context.sink.url, clock: context.clock });
});
test.after(async ({ server, sink }) => {
  await server.close();
  await sink.close();
});

let people = 0;
const newAddress = () => `person-${process.pid}-${++people}@Example.org`;

/**
 * Sets the address, then lets this process's sender hand what was queued to the sink: the
 * clock is a TestClock, so the sender's one-second poll only runs when told.
 */
async function setAddress(server: TestServer, token: string, email: string) {
  const answer = await server.post('/notifications/email', { email }, token);
  await server.services.mailSender!.idle();
  return answer;
}

/** The confirmation that reached `email`'s mailbox, with its code and link read out of it. */
async function confirmation(sink: MailSink, email: string, nth = 1) {
  const to = email.toLowerCase();
  let seen = 0;
  const mail = await sink.waitFor(
    (each) => each.envelope.to.includes(to) && each.subject.startsWith('Confirm') && ++seen >= nth,
    `confirmation ${nth} to ${to}`,
  );
  seen = 0;
  const code = /code: (\d{6})/.exec(mail.text)?.[1];
  const link = /(http\S+\/notifications\/email\/confirm\?token=\S+)/.exec(mail.text)?.[1];
  assert.ok(code, 'the email holds a 6-digit code');
  assert.ok(link, 'the email holds the confirmation link');
  return { mail, code, link };
}

function unsubscribeLink(mail: SunkMail): string {
  const header = mail.header('list-unsubscribe');
  const url = /^<(.+)>$/.exec(header)?.[1];
  assert.ok(url, `List-Unsubscribe holds one URL: ${header}`);
  return url;
}

async function statusOf(server: TestServer, token: string) {
  const response = await server.get('/notifications/email', token);
  return response.status === 200 ? ((await response.json()) as { status: string }).status : null;
}

test('the code emailed to the person confirms the address', async ({ server, sink }) => {
  const agent = await server.signUp();
  const email = newAddress();
  const answer = await setAddress(server, agent.api_token, email);
  assert.is(answer.status, 202);
  assert.equal(await answer.json(), { status: 'confirmation_sent' });
  const { mail, code } = await confirmation(sink, email);
  assert.is(mail.header('auto-submitted'), 'auto-generated');
  assert.is(mail.header('list-unsubscribe-post'), 'List-Unsubscribe=One-Click');
  assert.ok(mail.text.includes(`Agent name (written by an agent): "${agent.name}"`));
  assert.equal(await (await server.get('/notifications/email', agent.api_token)).json(), {
    email: email.toLowerCase(),
    status: 'pending',
  });
  const confirmed = await server.post('/notifications/email/confirm', { code }, agent.api_token);
  assert.is(confirmed.status, 200);
  assert.equal(await confirmed.json(), { email: email.toLowerCase(), confirmed: true });
  assert.is(await statusOf(server, agent.api_token), 'confirmed');
  const again = await server.post('/notifications/email/confirm', { code }, agent.api_token);
  assert.is(again.status, 409);
  assert.is(((await again.json()) as { code: string }).code, 'notification_email_not_pending');
});

test('the link confirms for a person; opened again it answers the same and changes nothing', async ({
  server,
  sink,
}) => {
  const agent = await server.signUp();
  const email = newAddress();
  await setAddress(server, agent.api_token, email);
  const { link } = await confirmation(sink, email);
  const page = await fetch(link, { headers: { accept: 'text/html,application/json;q=0.9' } });
  assert.is(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  assert.ok((await page.text()).includes('confirmed'));
  assert.is(await statusOf(server, agent.api_token), 'confirmed');
  const replay = await fetch(link, { headers: { accept: 'application/json' } });
  assert.is(replay.status, 200);
  assert.equal(await replay.json(), { email: email.toLowerCase(), confirmed: true });
  assert.is(await statusOf(server, agent.api_token), 'confirmed');
});

test('a link replaced by a newer address confirms nothing', async ({ server, sink }) => {
  const agent = await server.signUp();
  const first = newAddress();
  await setAddress(server, agent.api_token, first);
  const { link } = await confirmation(sink, first);
  const second = newAddress();
  await setAddress(server, agent.api_token, second);
  await confirmation(sink, second);
  const stale = await fetch(link);
  assert.is(stale.status, 404);
  assert.is(((await stale.json()) as { code: string }).code, 'not_found');
  assert.equal(await (await server.get('/notifications/email', agent.api_token)).json(), {
    email: second.toLowerCase(),
    status: 'pending',
  });
  const unknown = await fetch(server.url('/notifications/email/confirm?token=not-a-token'), {
    method: 'GET',
  });
  assert.is(unknown.status, 404);
});

test('five wrong codes void the confirmation, and neither the code nor the link works after', async ({
  server,
  sink,
}) => {
  const agent = await server.signUp();
  const email = newAddress();
  await setAddress(server, agent.api_token, email);
  const { code, link } = await confirmation(sink, email);
  const wrong = code === '000000' ? '000001' : '000000';
  for (let left = 4; left >= 1; left--) {
    const answer = await server.post(
      '/notifications/email/confirm',
      { code: wrong },
      agent.api_token,
    );
    assert.is(answer.status, 422);
    const problem = (await answer.json()) as { code: string; attempts_left: number };
    assert.is(problem.code, 'notification_code_wrong');
    assert.is(problem.attempts_left, left);
  }
  const fifth = await server.post('/notifications/email/confirm', { code: wrong }, agent.api_token);
  assert.is(fifth.status, 409);
  assert.is(((await fifth.json()) as { code: string }).code, 'notification_email_voided');
  assert.is(await statusOf(server, agent.api_token), 'voided');
  const right = await server.post('/notifications/email/confirm', { code }, agent.api_token);
  assert.is(right.status, 409);
  assert.is(((await right.json()) as { code: string }).code, 'notification_email_voided');
  const byLink = await fetch(link);
  assert.is(byLink.status, 409);
  assert.is(await statusOf(server, agent.api_token), 'voided');
});

test('a code that is not six digits is refused before it counts', async ({ server, sink }) => {
  const agent = await server.signUp();
  const email = newAddress();
  await setAddress(server, agent.api_token, email);
  await confirmation(sink, email);
  for (const code of ['12345', '1234567', 'abcdef', ' 12345']) {
    const answer = await server.post('/notifications/email/confirm', { code }, agent.api_token);
    assert.is(answer.status, 400);
    assert.is(((await answer.json()) as { code: string }).code, 'invalid_input');
  }
  const [row] = await server.services.driver.query<{ wrong_codes: number }>(
    'select wrong_codes from notification_emails where agent_id = $1',
    [agent.agent_id],
  );
  assert.is(row?.wrong_codes, 0);
});

test('an address that could inject a header or a recipient is refused and nothing is queued', async ({
  server,
}) => {
  const agent = await server.signUp();
  const hostile = [
    'person@example.org\r\nBcc: victim@example.net',
    'person@example.org\nSubject: hi',
    'person@example.org, victim@example.net',
    'Person <person@example.org>',
    'person@example.org\u0000',
    '"quoted"@example.org',
    'person@localhost',
    `${'a'.repeat(250)}@example.org`,
    '',
  ];
  for (const email of hostile) {
    const answer = await setAddress(server, agent.api_token, email);
    assert.is(answer.status, 400, JSON.stringify(email));
    assert.is(((await answer.json()) as { code: string }).code, 'invalid_input');
  }
  const queued = await server.services.driver.query(
    'select 1 from mail_outbox where agent_id = $1',
    [agent.agent_id],
  );
  assert.is(queued.length, 0);
  assert.is(await statusOf(server, agent.api_token), null);
});

test('an agent may have five confirmation emails sent an hour, then 429 until the hour has passed', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  for (let i = 0; i < 5; i++) {
    assert.is((await setAddress(server, agent.api_token, newAddress())).status, 202);
  }
  const refused = await setAddress(server, agent.api_token, newAddress());
  assert.is(refused.status, 429);
  const problem = (await refused.json()) as { code: string; retry_after_seconds: number };
  assert.is(problem.code, 'rate_limited');
  assert.is(problem.retry_after_seconds, 3600);
  assert.is(refused.headers.get('retry-after'), '3600');
  const [count] = await server.services.driver.query<{ n: number }>(
    `select count(*)::int as n from mail_outbox where agent_id = $1`,
    [agent.agent_id],
  );
  assert.is(count?.n, 5);
  clock.advance(3_600_000);
  await server.scheduler.idle();
  assert.is((await setAddress(server, agent.api_token, newAddress())).status, 202);
});

test('the unsubscribe link shows a button page, and its one-click POST unsubscribes at once', async ({
  server,
  sink,
}) => {
  const agent = await server.signUp();
  const email = newAddress();
  await setAddress(server, agent.api_token, email);
  const { mail, code } = await confirmation(sink, email);
  await server.post('/notifications/email/confirm', { code }, agent.api_token);
  const url = unsubscribeLink(mail);
  assert.ok(mail.text.includes(url), 'the body shows the same link');

  // A scanner or a person opening the link: a page with one button, nothing changes.
  const page = await fetch(url, { headers: { accept: 'text/html' } });
  assert.is(page.status, 200);
  const body = await page.text();
  assert.match(body, /<form method="post"/);
  assert.match(body, /name="List-Unsubscribe" value="One-Click"/);
  assert.is(await statusOf(server, agent.api_token), 'confirmed');
  const asJson = await fetch(url);
  assert.equal(await asJson.json(), { status: 'confirmed' });

  // RFC 8058: the mail client's one-click POST, a form body, no token.
  const oneClick = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });
  assert.is(oneClick.status, 200);
  assert.equal(await oneClick.json(), { status: 'unsubscribed' });
  assert.is(await statusOf(server, agent.api_token), 'unsubscribed');
  const again = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    body: 'List-Unsubscribe=One-Click',
  });
  assert.is(again.status, 200);
  assert.match(await again.text(), /Unsubscribed/);
  const unknown = await fetch(server.url('/notifications/email/unsubscribe?key=nope'), {
    method: 'POST',
    body: 'List-Unsubscribe=One-Click',
  });
  assert.is(unknown.status, 404);
  const unknownPage = await fetch(server.url('/notifications/email/unsubscribe?key=nope'), {
    method: 'GET',
  });
  assert.is(unknownPage.status, 404);
});

test('the confirmation email itself unsubscribes: the person who never asked stops it', async ({
  server,
  sink,
}) => {
  const agent = await server.signUp();
  const email = newAddress();
  await setAddress(server, agent.api_token, email);
  const { mail, code } = await confirmation(sink, email);
  const oneClick = await fetch(unsubscribeLink(mail), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });
  assert.is(oneClick.status, 200);
  const late = await server.post('/notifications/email/confirm', { code }, agent.api_token);
  assert.is(late.status, 409);
  assert.is(await statusOf(server, agent.api_token), 'unsubscribed');
});

test('over MCP the agent sets and confirms the address, told to ask its person first', async ({
  server,
  sink,
}) => {
  const agent = await server.signUp();
  const client = await connectMcp(server, agent.api_token, 'notification-email-test');
  try {
    const { tools } = await client.listTools();
    const set = tools.find((tool) => tool.name === 'set_notification_email');
    assert.ok(set, 'set_notification_email is a tool');
    assert.match(set.description ?? '', /^Ask your person first/);
    assert.ok(tools.some((tool) => tool.name === 'confirm_notification_email'));
    const email = newAddress();
    const sent = await client.callTool({ name: 'set_notification_email', arguments: { email } });
    assert.not.ok(sent.isError, JSON.stringify(sent));
    assert.equal(sent.structuredContent, { status: 'confirmation_sent' });
    await server.services.mailSender!.idle();
    const { code } = await confirmation(sink, email);
    const done = await client.callTool({
      name: 'confirm_notification_email',
      arguments: { code },
    });
    assert.equal(done.structuredContent, { email: email.toLowerCase(), confirmed: true });
  } finally {
    await client.close();
  }
});

test.run();
