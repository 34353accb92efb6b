import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import type { Driver } from '../../storage/driver.ts';
import {
  claimDueMail,
  insertOutboxMail,
  markMailFailed,
  markMailSent,
  outboxState,
} from '../../storage/email/outbox.ts';
import { driverKinds, openTestDriver, type DriverKind } from '../helpers/storage.ts';
import { driverSuite } from './contract.ts';

/**
 * claimDueMail on each driver: what the sender takes for a send. Due rows only, oldest due
 * first, at most `limit`; each claimed counts an attempt and is held until `leaseUntil`;
 * sent and failed rows never come back; a due row queued before `expireBefore` fails as
 * expired instead of being sent late.
 */
const T0 = Date.UTC(2030, 0, 1);
const at = (ms: number) => new Date(T0 + ms);
const DAY = 24 * 60 * 60_000;

async function queue(driver: Driver, createdAt: Date): Promise<string> {
  const messageId = `${randomUUID()}@example.test`;
  await insertOutboxMail(driver, {
    mailId: randomUUID(),
    messageId,
    kind: 'test',
    agentId: null,
    envelopeFrom: 'service@example.test',
    recipient: 'person@example.org',
    raw: new TextEncoder().encode(`Message-ID: <${messageId}>\r\n\r\nText.\r\n`),
    createdAt,
  });
  return messageId;
}

const claim = (driver: Driver, now: number, limit = 20) =>
  claimDueMail(driver, {
    now: at(now),
    leaseUntil: at(now + 300_000),
    expireBefore: at(now - DAY),
    limit,
  });

for (const kind of driverKinds() as DriverKind[]) {
  const test = driverSuite<{ driver: Driver }>(kind, `the mail outbox's claims on ${kind}`);
  test.before(async (context) => {
    context.driver = await openTestDriver(kind);
  });
  test.after(async ({ driver }) => {
    await driver.close();
  });

  test('due rows are claimed oldest first, at most the limit, each held until its lease ends', async ({
    driver,
  }) => {
    const first = await queue(driver, at(0));
    const second = await queue(driver, at(1));
    const later = await queue(driver, at(10_000));
    const claimed = await claim(driver, 5_000, 1);
    assert.equal(
      claimed.due.map((mail) => [mail.messageId, mail.attempts]),
      [[first, 1]],
    );
    assert.equal(
      (await claim(driver, 5_000)).due.map((mail) => mail.messageId),
      [second],
      'the first is held; the one not yet due waits',
    );
    assert.equal((await claim(driver, 5_000)).due, []);
    const row = await outboxState(driver, first);
    assert.is(row?.attempts, 1);
    assert.equal(row?.nextAttemptAt, at(305_000));
    const afterLease = await claim(driver, 305_000);
    assert.equal(
      afterLease.due.map((mail) => [mail.messageId, mail.attempts]).sort(),
      [
        [first, 2],
        [second, 2],
        [later, 1],
      ].sort(),
    );
  });

  test('sent and failed rows are never claimed again', async ({ driver }) => {
    const sent = await queue(driver, at(DAY));
    const failed = await queue(driver, at(DAY));
    const { due } = await claim(driver, DAY);
    const ids = Object.fromEntries(due.map((mail) => [mail.messageId, mail.mailId]));
    await markMailSent(driver, ids[sent]!, at(DAY));
    await markMailFailed(driver, ids[failed]!, at(DAY), '550: no');
    const mine = (await claim(driver, 10 * DAY)).due.filter((mail) =>
      [sent, failed].includes(mail.messageId),
    );
    assert.equal(mine, []);
    assert.equal((await outboxState(driver, failed))?.lastError, '550: no');
  });

  test('a due row queued more than a day ago fails as expired and is not handed out', async ({
    driver,
  }) => {
    const old = await queue(driver, at(20 * DAY));
    const fresh = await queue(driver, at(21 * DAY - 1));
    const result = await claim(driver, 21 * DAY);
    assert.ok(result.expired >= 1);
    const handed = result.due.map((mail) => mail.messageId);
    assert.ok(handed.includes(fresh));
    assert.not.ok(handed.includes(old));
    const row = await outboxState(driver, old);
    assert.equal(row?.failedAt, at(21 * DAY));
    assert.is(row?.attempts, 0);
    assert.match(row?.lastError ?? '', /^expired: not sent within 24 hours/);
  });

  test.run();
}
