import { createServer, type AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueueMail, type MailDraft } from '../../actors/email/outbox.ts';
import { outboxState } from '../../storage/email/outbox.ts';
import { TestClock } from '../helpers/clock.ts';
import { startMailSink, type MailSink } from '../helpers/mail-sink.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The outbox and its sender (issue 21, "Mail out"): every message the service sends is queued
 * whole in mail_outbox and handed to SMTP_URL by this process's sender, here a second SMTP
 * server standing in for the relay.
 */

let sent = 0;
const draft = (overrides: Partial<MailDraft> = {}): MailDraft => ({
  kind: 'change',
  to: `person-${process.pid}-${++sent}@example.org`,
  subject: 'Hello from the outbox',
  text: 'One line of text.\n',
  ...overrides,
});

const test = suite<{ server: TestServer; sink: MailSink }>('email outbox: delivery to SMTP_URL');

test.before(async (context) => {
  context.sink = await startMailSink();
  context.server = await startTestServer({ smtpUrl: context.sink.url });
});
test.after(async ({ server, sink }) => {
  await server.close();
  await sink.close();
});

test('a queued message reaches the relay of SMTP_URL with its headers and envelope', async ({
  server,
  sink,
}) => {
  const { services } = server;
  const message = draft({ unsubscribeUrl: 'https://example.test/unsubscribe?key=k' });
  const { messageId, queued } = await enqueueMail(services.driver, services, message);
  assert.ok(queued);
  const mail = await sink.waitFor((each) => each.messageId === messageId, 'the queued message');
  assert.equal(mail.subject, message.subject);
  assert.equal(mail.text.trim(), 'One line of text.');
  assert.equal(mail.envelope.to, [message.to]);
  assert.equal(mail.envelope.from, `service@${services.config.mail!.domain}`);
  assert.equal(mail.header('auto-submitted'), 'auto-generated');
  assert.equal(mail.header('list-unsubscribe'), '<https://example.test/unsubscribe?key=k>');
  assert.equal(mail.header('list-unsubscribe-post'), 'List-Unsubscribe=One-Click');
  await services.mailSender!.idle();
  const [row] = await services.driver.query<{ sent_at: Date | null; attempts: number }>(
    'select sent_at, attempts from mail_outbox where message_id = $1',
    [messageId.slice(1, -1)],
  );
  assert.ok(row?.sent_at, 'the row is marked sent');
  assert.is(row?.attempts, 1);
});

test.run();

const outboxOnly = suite<{ server: TestServer; lines: string[] }>(
  'email outbox: without SMTP_URL, mail stays in the outbox',
);

outboxOnly.before(async (context) => {
  context.lines = [];
  context.server = await startTestServer({ log: (line) => context.lines.push(line) });
});
outboxOnly.after(async ({ server }) => {
  await server.close();
});

outboxOnly(
  'each queued message is one log line and a row that nothing sends',
  async ({ server, lines }) => {
    const { services } = server;
    const message = draft({ kind: 'digest' });
    const { messageId } = await enqueueMail(services.driver, services, message);
    const said = lines.filter((line) => line.startsWith('mail: '));
    assert.equal(said, [
      `mail: queued digest to ${message.to} (no SMTP_URL: kept in the outbox) ${messageId}`,
    ]);
    await services.mailSender!.idle();
    const row = await outboxState(services.driver, messageId.slice(1, -1));
    assert.is(row?.attempts, 0);
    assert.is(row?.sentAt, null);
    assert.is(row?.failedAt, null);
  },
);

outboxOnly(
  'a message queued again under the same Message-ID is neither queued nor logged twice',
  async ({ server, lines }) => {
    const { services } = server;
    const message = draft({ idKey: `change-${process.pid}-once` });
    const first = await enqueueMail(services.driver, services, message);
    const second = await enqueueMail(services.driver, services, message);
    assert.equal([first.queued, second.queued], [true, false]);
    assert.is(lines.filter((line) => line.includes(first.messageId)).length, 1);
  },
);

outboxOnly.run();

const unreachable = suite<{ server: TestServer; clock: TestClock }>(
  'email outbox: a relay that cannot be reached',
);

unreachable.before(async (context) => {
  // A port nothing listens on: taken, then let go.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  context.clock = new TestClock();
  context.server = await startTestServer({
    clock: context.clock,
    smtpUrl: `smtp://127.0.0.1:${port}`,
  });
});
unreachable.after(async ({ server }) => {
  await server.close();
});

unreachable(
  'a refused connection is retried 30 s later, not given up',
  async ({ server, clock }) => {
    const { services } = server;
    const { messageId } = await enqueueMail(services.driver, services, draft());
    await services.mailSender!.idle();
    let row = await outboxState(services.driver, messageId.slice(1, -1));
    assert.is(row?.attempts, 1);
    assert.is(row?.failedAt, null);
    assert.match(row?.lastError ?? '', /ECONNREFUSED|ECONNECTION|connect/i);
    assert.is(row!.nextAttemptAt.getTime() - clock.now(), 30_000);
    clock.advance(30_000);
    await services.mailSender!.idle();
    row = await outboxState(services.driver, messageId.slice(1, -1));
    assert.is(row?.attempts, 2);
    assert.is(row?.failedAt, null);
  },
);

unreachable.run();
