import * as assert from 'uvu/assert';
import { enqueueMail, type MailDraft } from '../../actors/email/outbox.ts';
import { GIVE_UP_AFTER_MS } from '../../actors/email/sender.ts';
import { outboxState } from '../../storage/email/outbox.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { TestClock } from '../helpers/clock.ts';
import { startMailSink, type MailSink } from '../helpers/mail-sink.ts';
import { startTestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * The outbox across processes (issue 21, "Mail out"), on PostgreSQL: servers on one database
 * are processes as far as the service can tell. Each message leaves once however many senders
 * look; a sender that starts later sends what was queued without one, unless it waited past a
 * day; and a server that stops waits for the send it has in flight.
 */

let sent = 0;
const draft = (overrides: Partial<MailDraft> = {}): MailDraft => ({
  kind: 'change',
  to: `person-${process.pid}-${++sent}@example.org`,
  subject: 'Hello from one of two processes',
  text: 'Text.\n',
  ...overrides,
});

const test = postgresSuite<{ sink: MailSink }>('email outbox: several processes, one database');

test.before(async (context) => {
  context.sink = await startMailSink();
});
test.after(async ({ sink }) => {
  await sink.close();
});

test('two servers on one database send each queued message once', async ({ sink }) => {
  const databaseUrl = await freshDatabaseUrl();
  const a = await startTestServer({ databaseUrl, smtpUrl: sink.url });
  const b = await startTestServer({ databaseUrl, smtpUrl: sink.url });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const queuer = i % 2 === 0 ? a : b;
      const { messageId } = await enqueueMail(queuer.services.driver, queuer.services, draft());
      ids.push(messageId);
      // Both look at once, every time: they race for the same rows.
      a.services.mailSender!.kick();
      b.services.mailSender!.kick();
    }
    for (const id of ids) await sink.waitFor((mail) => mail.messageId === id, id);
    await Promise.all([a.services.mailSender!.idle(), b.services.mailSender!.idle()]);
    for (const id of ids) {
      assert.is(sink.mails.filter((mail) => mail.messageId === id).length, 1, `${id} once`);
      const row = await outboxState(a.services.driver, id.slice(1, -1));
      assert.is(row?.attempts, 1);
      assert.ok(row?.sentAt);
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('mail queued without SMTP_URL is sent by a sender started within a day, and given up after one', async ({
  sink,
}) => {
  const databaseUrl = await freshDatabaseUrl();
  const clock = new TestClock();
  const quiet = await startTestServer({ databaseUrl, clock });
  const early = await enqueueMail(quiet.services.driver, quiet.services, draft());
  clock.advance(GIVE_UP_AFTER_MS / 2);
  const late = await enqueueMail(quiet.services.driver, quiet.services, draft());
  await quiet.close();
  // The operator sets SMTP_URL and restarts a day and a minute after the first was queued.
  clock.advance(GIVE_UP_AFTER_MS / 2 + 60_000);
  const sending = await startTestServer({ databaseUrl, clock, smtpUrl: sink.url });
  try {
    await sink.waitFor((mail) => mail.messageId === late.messageId, 'the message half a day old');
    await sending.services.mailSender!.idle();
    const expired = await outboxState(sending.services.driver, early.messageId.slice(1, -1));
    assert.ok(expired?.failedAt, 'the day-old message is given up');
    assert.is(expired?.attempts, 0);
    assert.match(expired?.lastError ?? '', /^expired: not sent within 24 hours/);
    assert.ok(!sink.mails.some((mail) => mail.messageId === early.messageId), 'never sent late');
  } finally {
    await sending.close();
  }
});

test('a server that stops waits for the send it has in flight and marks it', async ({ sink }) => {
  const databaseUrl = await freshDatabaseUrl();
  const server = await startTestServer({ databaseUrl, smtpUrl: sink.url });
  const { messageId } = await enqueueMail(server.services.driver, server.services, draft());
  // No wait: the pass the queueing started is under way when the server closes.
  await server.close();
  const driver = await openPostgres(databaseUrl);
  try {
    const row = await outboxState(driver, messageId.slice(1, -1));
    assert.ok(row?.sentAt, 'sent and marked before the server let go of storage');
    assert.is(sink.mails.filter((mail) => mail.messageId === messageId).length, 1);
  } finally {
    await driver.close();
  }
});

test.run();
