import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueueMail, type MailDraft } from '../../actors/email/outbox.ts';
import { CLAIM_LEASE_MS, GIVE_UP_AFTER_MS } from '../../actors/email/sender.ts';
import { outboxState, type OutboxState } from '../../storage/email/outbox.ts';
import { TestClock } from '../helpers/clock.ts';
import { startMailSink, type MailSink } from '../helpers/mail-sink.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * How the sender retries (issue 21, "Mail out"), on a clock the test moves: a 4xx answer or a
 * connection that fails is tried again 30 s later, then 1, 2, 4... minutes later, at most an
 * hour apart, and given up after a day; a 5xx answer is given up at once; a message claimed
 * and sent but not marked (a crash between) is sent once more, with the same Message-ID, and
 * never a third time. The relay is a second SMTP server that refuses by recipient.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

interface Context {
  clock: TestClock;
  sink: MailSink;
  server: TestServer;
  /** Recipients the relay refuses with 451 until they are taken out of this set. */
  refusedForNow: Set<string>;
}

let sent = 0;
const address = (what: string) => `${what}-${process.pid}-${++sent}@example.org`;
const draft = (to: string, overrides: Partial<MailDraft> = {}): MailDraft => ({
  kind: 'change',
  to,
  subject: `A message to ${to}`,
  text: 'Text.\n',
  ...overrides,
});

const test = suite<Context>('email outbox: retries, backoff and giving up');

test.before(async (context) => {
  context.clock = new TestClock();
  context.refusedForNow = new Set();
  context.sink = await startMailSink({
    refuse: (to) => {
      if (to.startsWith('hard-')) return { code: 550, message: 'No such user here' };
      if (to.startsWith('soft-') || context.refusedForNow.has(to))
        return { code: 451, message: 'Try again later' };
      return undefined;
    },
  });
  context.server = await startTestServer({ clock: context.clock, smtpUrl: context.sink.url });
});
test.after(async ({ server, sink }) => {
  await server.close();
  await sink.close();
});

async function queue(server: TestServer, mail: MailDraft): Promise<string> {
  const { messageId } = await enqueueMail(server.services.driver, server.services, mail);
  await server.services.mailSender!.idle();
  return messageId;
}

async function state(server: TestServer, messageId: string): Promise<OutboxState> {
  const found = await outboxState(server.services.driver, messageId.slice(1, -1));
  assert.ok(found, `an outbox row for ${messageId}`);
  return found;
}

/** Moves the clock to `at` and lets the sender do what fell due. */
async function moveTo(context: Context, at: number): Promise<void> {
  context.clock.advance(Math.max(0, at - context.clock.now()));
  await context.server.services.mailSender!.idle();
}

const copies = (sink: MailSink, messageId: string) =>
  sink.mails.filter((mail) => mail.messageId === messageId).length;

test('a 4xx answer is retried after 30 s, then at doubling intervals up to an hour, and sent once it passes', async (context) => {
  const { server, sink, clock } = context;
  const to = address('later');
  context.refusedForNow.add(to);
  const messageId = await queue(server, draft(to));
  let row = await state(server, messageId);
  assert.is(row.attempts, 1);
  assert.is(row.sentAt, null);
  assert.match(row.lastError ?? '', /451/);
  const waits: number[] = [];
  for (let attempt = 1; attempt <= 9; attempt++) {
    const next = row.nextAttemptAt.getTime();
    waits.push(next - clock.now());
    // Not a moment before it falls due.
    await moveTo(context, next - 1);
    assert.is((await state(server, messageId)).attempts, attempt);
    await moveTo(context, next);
    row = await state(server, messageId);
    assert.is(row.attempts, attempt + 1);
  }
  assert.equal(
    waits.map((wait) => wait / 1000),
    [30, 60, 120, 240, 480, 960, 1920, 3600, 3600],
  );
  assert.is(copies(sink, messageId), 0);
  context.refusedForNow.delete(to);
  await moveTo(context, row.nextAttemptAt.getTime());
  row = await state(server, messageId);
  assert.ok(row.sentAt, 'sent once the relay takes it');
  assert.is(row.failedAt, null);
  assert.is(copies(sink, messageId), 1);
});

test('a message the relay keeps refusing with 4xx is given up after 24 hours with the last error', async (context) => {
  const { server, sink, clock } = context;
  const queuedAt = clock.now();
  const messageId = await queue(server, draft(address('soft')));
  let row = await state(server, messageId);
  while (!row.failedAt) {
    assert.ok(clock.now() - queuedAt <= GIVE_UP_AFTER_MS, 'never tried past a day');
    await moveTo(context, row.nextAttemptAt.getTime());
    row = await state(server, messageId);
  }
  assert.ok(row.failedAt.getTime() - queuedAt <= GIVE_UP_AFTER_MS);
  assert.ok(row.failedAt.getTime() - queuedAt > GIVE_UP_AFTER_MS - HOUR, 'tried for most of a day');
  assert.match(row.lastError ?? '', /^gave up after 24 hours: 451/);
  assert.is(row.sentAt, null);
  const attempts = row.attempts;
  await moveTo(context, clock.now() + 2 * GIVE_UP_AFTER_MS);
  assert.is((await state(server, messageId)).attempts, attempts, 'no attempt after giving up');
  assert.is(copies(sink, messageId), 0);
});

test('a 5xx answer is given up at once', async (context) => {
  const { server, clock } = context;
  const messageId = await queue(server, draft(address('hard')));
  const row = await state(server, messageId);
  assert.is(row.attempts, 1);
  assert.ok(row.failedAt);
  assert.match(row.lastError ?? '', /^550/);
  await moveTo(context, clock.now() + 2 * HOUR);
  assert.is((await state(server, messageId)).attempts, 1);
});

test('a message claimed and sent but not marked sent (a crash between) is sent once more with the same Message-ID, never a third time', async (context) => {
  const { server, sink, clock } = context;
  const messageId = await queue(server, draft(address('crash')));
  await sink.waitFor((mail) => mail.messageId === messageId, 'the first send');
  const claimedAt = clock.now();
  // What a process that dies between the send and its mark leaves: the claim committed
  // (attempts counted, next_attempt_at moved on), sent_at never written.
  await server.services.driver.query(
    'update mail_outbox set sent_at = null where message_id = $1',
    [messageId.slice(1, -1)],
  );
  await moveTo(context, claimedAt + CLAIM_LEASE_MS - 1);
  assert.is(copies(sink, messageId), 1, 'not again while the claim holds');
  await moveTo(context, claimedAt + CLAIM_LEASE_MS);
  await sink.waitFor(
    (mail) => mail.messageId === messageId && copies(sink, messageId) === 2,
    'the repeat',
  );
  const row = await state(server, messageId);
  assert.ok(row.sentAt);
  assert.is(row.attempts, 2);
  await moveTo(context, clock.now() + 2 * GIVE_UP_AFTER_MS);
  assert.is(copies(sink, messageId), 2, 'never a third time');
  const [first, second] = sink.mails.filter((mail) => mail.messageId === messageId);
  assert.ok(first!.raw.equals(second!.raw), 'the same bytes, so the receiver can drop the repeat');
});

test('a subject with CR LF and a Bcc line cannot add a header or a recipient', async ({
  server,
  sink,
}) => {
  const to = address('inject');
  const messageId = await queue(
    server,
    draft(to, { subject: 'Hello\r\nBcc: victim@example.org\r\nX-Injected: yes\n\nbody?' }),
  );
  const mail = await sink.waitFor((each) => each.messageId === messageId, 'the message');
  assert.equal(mail.envelope.to, [to]);
  assert.is(mail.header('bcc'), '');
  assert.is(mail.header('x-injected'), '');
  assert.is(mail.parsed.bcc, undefined);
  assert.is(mail.parsed.headerLines.filter((line) => line.key === 'subject').length, 1);
  assert.match(mail.subject, /^Hello\s+Bcc: victim@example\.org\s+X-Injected: yes/);
  assert.is(mail.text.trim(), 'Text.');
});

test('an address with a line break or a second recipient is refused before anything is queued', async ({
  server,
}) => {
  const { services } = server;
  for (const to of [
    'a@example.org\r\nRCPT TO:<b@example.org>',
    'a@example.org, b@example.org',
    'Name <a@example.org>',
  ]) {
    const before = await services.driver.query('select count(*)::int as n from mail_outbox');
    let refused = false;
    await enqueueMail(services.driver, services, draft(to)).catch(() => (refused = true));
    assert.ok(refused, `refused: ${JSON.stringify(to)}`);
    assert.equal(await services.driver.query('select count(*)::int as n from mail_outbox'), before);
  }
});

test.run();
