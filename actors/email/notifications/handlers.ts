import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { html, reply } from '../../../protocol/binding.ts';
import { ServiceError } from '../../../protocol/errors.ts';
import { DIGEST_INTERVAL_MS, NOTIFICATION_EMAILS_PER_HOUR } from '../../../protocol/email/email.ts';
import {
  MAX_WRONG_CODES,
  notificationEmailCodec,
  notificationEmailFromRow,
  notificationEmailStatus,
  type NotificationEmailEvent,
} from '../../../machines/notification-email.ts';
import { readFeedHead } from '../../../storage/kernel/changes.ts';
import {
  confirmationsSentSince,
  findNotificationEmail,
  findNotificationEmailByUnsubscribeKey,
  lockNotificationEmailByLink,
  saveNotificationEmail,
  type NotificationEmailRow,
} from '../../../storage/email/notification-emails.ts';
import type { Queryable } from '../../../storage/driver.ts';
import type { Handler } from '../../kernel/handler.ts';
import type { Services } from '../../kernel/services.ts';
import { enqueueMail } from '../outbox.ts';
import {
  confirmationMail,
  confirmedPage,
  unsubscribedPage,
  unsubscribePage,
  wantsPage,
} from './messages.ts';

/** The outbox kind of confirmation emails, which the hourly limit counts. */
const CONFIRMATION_KIND = 'notification_confirm';

const PAGE_HEADERS = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

export function unsubscribeUrl(services: Services, key: string): string {
  return `${services.config.baseUrl}/notifications/email/unsubscribe?key=${key}`;
}

/** The row after `event`, as the machine decides it. */
function stepped(row: NotificationEmailRow, event: NotificationEmailEvent): NotificationEmailRow {
  const next = notificationEmailCodec.step(notificationEmailFromRow(row), event);
  return {
    ...row,
    status: notificationEmailStatus(next),
    wrongCodes: next.context.wrong_codes,
  };
}

/**
 * Confirmed: the code can no longer be used, and the digests start from the agent's changes as
 * they are now (the person hears of what happens after confirming, not of the agent's past).
 */
async function confirmedRow(
  db: Queryable,
  row: NotificationEmailRow,
  now: Date,
): Promise<NotificationEmailRow> {
  const head = await readFeedHead(db, row.agentId);
  return {
    ...row,
    codeHash: null,
    confirmedAt: now,
    digestedSeq: Math.max(row.digestedSeq, Number(head?.lastSeq ?? 0)),
    lastDigestAt: null,
  };
}

export const setNotificationEmail: Handler<'set_notification_email'> = async (call, input) => {
  const { services, principal } = call;
  const now = services.clock.now();
  await services.agents.command(principal.agentId, async (_agent, tx) => {
    // The agent's row is locked by the command: two requests at once count one after the other.
    const sent = await confirmationsSentSince(
      tx,
      principal.agentId,
      CONFIRMATION_KIND,
      new Date(now - DIGEST_INTERVAL_MS),
    );
    if (sent.length >= NOTIFICATION_EMAILS_PER_HOUR) {
      const oldest = (sent[0] as Date).getTime();
      const retryAfter = Math.max(1, Math.ceil((oldest + DIGEST_INTERVAL_MS - now) / 1000));
      throw new ServiceError(
        'rate_limited',
        `At most ${NOTIFICATION_EMAILS_PER_HOUR} confirmation emails an hour; the next may go in ${retryAfter} s.`,
        { retry_after_seconds: retryAfter },
        { 'retry-after': String(retryAfter) },
      );
    }
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const linkToken = randomBytes(32).toString('base64url');
    const existing = await findNotificationEmail(tx, principal.agentId, { lock: true });
    const base: NotificationEmailRow = existing ?? {
      agentId: principal.agentId,
      email: input.email,
      status: 'pending',
      codeHash: null,
      linkTokenHash: null,
      wrongCodes: 0,
      unsubscribeKey: '',
      requestedAt: new Date(now),
      confirmedAt: null,
      digestedSeq: 0,
      lastDigestAt: null,
    };
    const row: NotificationEmailRow = {
      ...stepped(base, { type: 'set' }),
      email: input.email,
      codeHash: sha256(code),
      linkTokenHash: sha256(linkToken),
      // A new key for each address: a link from an older email unsubscribes nothing new.
      unsubscribeKey: randomBytes(24).toString('base64url'),
      requestedAt: new Date(now),
      confirmedAt: null,
      lastDigestAt: null,
    };
    await saveNotificationEmail(tx, row);
    const text = confirmationMail({
      agentName: principal.name,
      code,
      confirmUrl: `${services.config.baseUrl}/notifications/email/confirm?token=${linkToken}`,
      unsubscribeUrl: unsubscribeUrl(services, row.unsubscribeKey),
      serviceUrl: services.config.baseUrl,
    });
    await enqueueMail(tx, services, {
      kind: CONFIRMATION_KIND,
      agentId: principal.agentId,
      to: input.email,
      ...text,
      autoSubmitted: 'auto-generated',
      unsubscribeUrl: unsubscribeUrl(services, row.unsubscribeKey),
    });
    return { result: undefined };
  });
  return { status: 'confirmation_sent' as const };
};

type CodeOutcome =
  | { kind: 'confirmed'; email: string }
  | { kind: 'wrong'; attemptsLeft: number }
  | { kind: 'voided' }
  | { kind: 'not_pending'; status: string }
  | { kind: 'none' };

export const confirmNotificationEmail: Handler<'confirm_notification_email'> = async (
  call,
  input,
) => {
  const { services, principal } = call;
  const now = new Date(services.clock.now());
  // The outcome is committed first (a wrong code counts even though the answer is an error).
  const outcome = await services.agents.command(
    principal.agentId,
    async (_agent, tx): Promise<{ result: CodeOutcome }> => {
      const row = await findNotificationEmail(tx, principal.agentId, { lock: true });
      if (!row) return { result: { kind: 'none' } };
      if (row.status === 'voided') return { result: { kind: 'voided' } };
      if (row.status !== 'pending' || row.codeHash === null) {
        return { result: { kind: 'not_pending', status: row.status } };
      }
      const matches = sameHash(sha256(input.code), row.codeHash);
      let next = stepped(row, { type: 'confirm_code', matches });
      if (next.status === 'confirmed') next = await confirmedRow(tx, next, now);
      if (next.status === 'voided') next = { ...next, codeHash: null };
      await saveNotificationEmail(tx, next);
      if (next.status === 'confirmed') return { result: { kind: 'confirmed', email: next.email } };
      if (next.status === 'voided') return { result: { kind: 'voided' } };
      return { result: { kind: 'wrong', attemptsLeft: MAX_WRONG_CODES - next.wrongCodes } };
    },
  );
  switch (outcome?.kind) {
    case 'confirmed':
      return { email: outcome.email, confirmed: true as const };
    case 'wrong':
      throw new ServiceError(
        'notification_code_wrong',
        `That is not the code in the email; ${outcome.attemptsLeft} tries left.`,
        { attempts_left: outcome.attemptsLeft },
      );
    case 'voided':
      throw new ServiceError(
        'notification_email_voided',
        `${MAX_WRONG_CODES} wrong codes voided this confirmation: ask your person, then set the address again.`,
      );
    case 'not_pending':
      throw new ServiceError(
        'notification_email_not_pending',
        `No confirmation is waiting: the address is ${outcome.status}.`,
        { status: outcome.status },
      );
    default:
      throw new ServiceError('not_found', 'No notification address is set: set one first.');
  }
};

export const confirmNotificationEmailLink: Handler<'confirm_notification_email_link'> = async (
  call,
  input,
) => {
  const { services } = call;
  const now = new Date(services.clock.now());
  const outcome = await services.commit(async (tx): Promise<{ result: CodeOutcome }> => {
    const row = await lockNotificationEmailByLink(tx, sha256(input.token));
    if (!row) return { result: { kind: 'none' } };
    // Opened again (a person's second click, a scanner): the same answer, nothing changes.
    if (row.status === 'confirmed') return { result: { kind: 'confirmed', email: row.email } };
    if (row.status === 'voided') return { result: { kind: 'voided' } };
    if (row.status !== 'pending') return { result: { kind: 'not_pending', status: row.status } };
    const next = await confirmedRow(tx, stepped(row, { type: 'confirm_link' }), now);
    await saveNotificationEmail(tx, next);
    return { result: { kind: 'confirmed', email: next.email } };
  });
  switch (outcome.kind) {
    case 'confirmed':
      return wantsPage(call.headers.accept)
        ? reply(200, html(confirmedPage(outcome.email)), PAGE_HEADERS)
        : reply(200, { email: outcome.email, confirmed: true as const }, PAGE_HEADERS);
    case 'voided':
      throw new ServiceError(
        'notification_email_voided',
        'Too many wrong codes voided this confirmation; the agent must set the address again.',
      );
    case 'not_pending':
      throw new ServiceError(
        'notification_email_not_pending',
        `No confirmation is waiting: the address is ${outcome.status}.`,
        { status: outcome.status },
      );
    default:
      throw new ServiceError(
        'not_found',
        'This link is unknown, or a newer confirmation email replaced it.',
      );
  }
};

export const getNotificationEmail: Handler<'get_notification_email'> = async (call) => {
  const row = await findNotificationEmail(call.services.db(), call.principal.agentId);
  if (!row) throw new ServiceError('not_found', 'No notification address is set.');
  return { email: row.email, status: row.status };
};

export const notificationUnsubscribePage: Handler<'notification_unsubscribe_page'> = async (
  call,
  input,
) => {
  const { services } = call;
  const row = await findNotificationEmailByUnsubscribeKey(services.db(), input.key);
  if (!row) throw new ServiceError('not_found', 'This unsubscribe link is unknown.');
  return wantsPage(call.headers.accept)
    ? reply(
        200,
        html(unsubscribePage(unsubscribeUrl(services, input.key), row.status)),
        PAGE_HEADERS,
      )
    : reply(200, { status: row.status }, PAGE_HEADERS);
};

export const unsubscribeNotificationEmail: Handler<'unsubscribe_notification_email'> = async (
  call,
  input,
) => {
  const { services } = call;
  // The body (RFC 8058's `List-Unsubscribe=One-Click`) says nothing the address does not:
  // drained, not read.
  for await (const chunk of call.body) void chunk;
  const found = await services.commit(async (tx) => {
    const row = await findNotificationEmailByUnsubscribeKey(tx, input.key, { lock: true });
    if (!row) return { result: false };
    if (row.status !== 'unsubscribed') {
      await saveNotificationEmail(tx, {
        ...stepped(row, { type: 'unsubscribe' }),
        codeHash: null,
      });
    }
    return { result: true };
  });
  if (!found) throw new ServiceError('not_found', 'This unsubscribe link is unknown.');
  return wantsPage(call.headers.accept)
    ? reply(200, html(unsubscribedPage()), PAGE_HEADERS)
    : reply(200, { status: 'unsubscribed' as const }, PAGE_HEADERS);
};
