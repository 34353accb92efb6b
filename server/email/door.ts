import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { ParsedMail } from 'mailparser';
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerDataStream,
  type SMTPServerSession,
} from 'smtp-server';
import { inboundLog } from '../../actors/email/inbound-log.ts';
import { serviceAddress } from '../../actors/email/settings.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { storageProblem } from '../../actors/kernel/storage-problems.ts';
import { emailAddressProblem } from '../../protocol/email/address.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { RateLimiter } from '../http/rate-limit.ts';
import { isAutomaticMail } from './automatic-mail.ts';
import type { InboundMail, MailRouter } from './inbound.ts';
import { newText, plainSubject } from './new-text.ts';
import { recipientOf, type Recipient } from './recipients.ts';
import { checkResolver, checkSender } from './sender-auth.ts';

/** The running SMTP door. */
export interface MailDoor {
  readonly port: number;
  close(): Promise<void>;
}

/** Recipients one message may have; the 11th is answered 452 (the client sends it later). */
const MAX_RECIPIENTS = 10;

/** An SMTP refusal: smtp-server answers the command with `responseCode` and the message. */
function refusal(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

/** Whether an error means the database is away for now (the sender should retry: 451). */
function databaseAway(error: unknown): boolean {
  return (
    storageProblem(error) !== undefined ||
    (error instanceof ServiceError && error.code === 'storage_unavailable')
  );
}

const TRY_LATER = 'Requested action aborted: local problem in processing, try again later';

/**
 * The SMTP door (the email-only interface): takes mail for MAIL_JOIN_ADDRESS, service@, the
 * agents' private addresses and email invites' reply addresses under MAIL_DOMAIN, and nothing else.
 * No AUTH, no STARTTLS: TLS belongs to the MTA in front of it. A message past
 * MAIL_MAX_MESSAGE_BYTES is refused at DATA (552) without being kept in memory past the limit;
 * each taken message is recorded once per recipient (a retried delivery runs nothing again),
 * its sender checked (SPF, DKIM, DMARC), its new text extracted, and handed to `router` by the
 * kind of its recipient; automatic mail is recorded and never handed on. The database away:
 * 451, so the sender retries.
 */
export async function startMailDoor(
  services: Services,
  options: {
    host: string;
    port: number;
    router: MailRouter;
    log: (message: string) => void;
    /** Messages one client address may send a minute (RATE_LIMIT_PER_MINUTE); 0 or unset: no limit. */
    messagesPerMinute?: number;
  },
): Promise<MailDoor> {
  const settings = services.config.mail;
  if (!settings) throw new Error('the SMTP door needs the mail settings (services.config.mail)');
  const { router, log } = options;
  const limiter = options.messagesPerMinute
    ? new RateLimiter({ limit: options.messagesPerMinute, windowSeconds: 60 }, services.clock)
    : null;
  // What each accepted RCPT TO is, found once at RCPT (smtp-server keeps the same object).
  const recipients = new WeakMap<SMTPServerAddress, Recipient>();

  const server = new SMTPServer({
    name: settings.domain,
    banner: 'agent service mail door',
    size: settings.maxMessageBytes,
    rejectOversized: true,
    maxRecipients: MAX_RECIPIENTS,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 2000,
    onMailFrom(_address, session, callback) {
      if (!limiter) return callback();
      try {
        limiter.take(clientIp(session));
        callback();
      } catch (error) {
        const wait = (error as ServiceError).extra?.retry_after_seconds ?? 60;
        callback(
          refusal(451, `4.7.1 Too many messages from your address: try again in ${String(wait)} s`),
        );
      }
    },
    onRcptTo(address, _session, callback) {
      recipientOf(services, settings, address.address).then(
        (recipient) => {
          if (!recipient)
            return callback(
              refusal(
                550,
                '5.1.1 No such recipient here: this server takes mail only for its own addresses',
              ),
            );
          recipients.set(address, recipient);
          callback();
        },
        (error: unknown) => {
          if (!databaseAway(error)) log(`mail door: RCPT look-up failed: ${String(error)}`);
          callback(refusal(451, `4.3.0 ${TRY_LATER}`));
        },
      );
    },
    onData(stream, session, callback) {
      readBounded(stream).then((raw) => {
        // Past the size limit smtp-server answers 552 itself (rejectOversized); nothing is kept.
        if (raw === null) return callback(refusal(552, '5.3.4 Message too big for this server'));
        takeMessage(raw, session).then(
          () => callback(null, 'Message taken'),
          (error: unknown) => {
            if (!databaseAway(error)) log(`mail door: a message failed: ${String(error)}`);
            callback(refusal(451, `4.3.0 ${TRY_LATER}`));
          },
        );
      }, callback);
    },
  });

  /** Hands one message to the router once per recipient, recording each. */
  async function takeMessage(raw: Buffer, session: SMTPServerSession): Promise<void> {
    // Loaded by the first message rather than at start (~23 MB of RSS an idle door never needs).
    const { simpleParser } = await import('mailparser');
    const parsed = await simpleParser(raw, { skipTextToHtml: true, skipTextLinks: true });
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const from = fromAddress(parsed);
    const ip = clientIp(session);
    const auth = await checkSender(
      raw,
      from,
      { ip, helo: session.hostNameAppearsAs ?? '', envelopeFrom, mta: settings!.domain },
      checkResolver(settings!.dnsServers, settings!.dnsTimeoutMs),
    );
    const automatic = isAutomaticMail({
      header: (name) => headerText(parsed, name),
      envelopeFrom,
      from,
      serviceAddress: serviceAddress(settings!),
    });
    const messageId = messageIdOf(parsed, raw);
    // A decoded subject may hold line breaks (an encoded word): never a header of ours to split.
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    const subject = plainSubject((parsed.subject ?? '').replace(/[\u0000-\u001f\u007f]+/g, ' '));
    const mail: Omit<InboundMail, 'recipient'> = {
      messageId,
      from,
      envelopeFrom,
      remoteIp: ip,
      subject,
      text: newText(parsed.text ?? ''),
      inReplyTo: parsed.inReplyTo ?? null,
      references: Array.isArray(parsed.references)
        ? parsed.references
        : parsed.references
          ? [parsed.references]
          : [],
      attachments: parsed.attachments.map((attachment) => ({
        filename: attachment.filename ?? 'attachment',
        contentType: attachment.contentType,
        content: attachment.content,
      })),
      auth,
    };
    for (const rcpt of session.envelope.rcptTo) {
      const recipient =
        recipients.get(rcpt) ?? (await recipientOf(services, settings!, rcpt.address));
      if (!recipient) continue;
      const address = rcpt.address.toLowerCase();
      const key = `${messageId} ${address}`;
      const taken = await inboundLog.record(services, {
        key,
        receivedAt: new Date(services.clock.now()),
        recipient: address,
        fromAddress: from,
        envelopeFrom,
        remoteIp: ip,
        auth,
        agentId: recipient.kind === 'agent' ? recipient.agentId : null,
        subject: subject.slice(0, 998),
        outcome: automatic ? 'automatic' : 'dispatching',
      });
      // A repeat (the same Message-ID again) runs nothing; automatic mail is never answered.
      if (!taken || automatic) continue;
      await dispatch({ ...mail, recipient: address }, recipient, key);
    }
  }

  async function dispatch(mail: InboundMail, recipient: Recipient, key: string): Promise<void> {
    try {
      if (recipient.kind === 'join') await router.join(mail);
      else if (recipient.kind === 'agent') await router.agent(mail, recipient.agentId);
      else if (recipient.kind === 'service') await router.service(mail);
      else await router.invite(mail, recipient.key);
    } catch (error) {
      if (databaseAway(error)) {
        // Not kept: the sender's retry (after our 451) runs it again.
        await inboundLog.forget(services, key).catch(() => undefined);
        throw error;
      }
      // A failure of ours is not the sender's to retry: recorded, answered 250, never looped.
      log(`mail door: handling ${mail.messageId} for ${mail.recipient} failed: ${String(error)}`);
      await inboundLog.setOutcome(services, key, 'failed').catch(() => undefined);
      return;
    }
    await inboundLog.setOutcome(services, key, 'dispatched');
  }

  // smtp-server re-emits its net server's errors on itself: a listen error (a busy port) with
  // no listener there would be thrown past this promise as an uncaught 'error' event.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => log(`mail door: ${String(error)}`));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The message's bytes, or null when it went past the size limit: once past it every chunk is
 * dropped (the stream is still read to its end, as SMTP requires), so memory never holds more
 * than the limit and one chunk.
 */
function readBounded(stream: SMTPServerDataStream): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => {
      if (stream.sizeExceeded) chunks = [];
      else chunks.push(chunk);
    });
    stream.once('error', reject);
    stream.once('end', () => resolve(stream.sizeExceeded ? null : Buffer.concat(chunks)));
  });
}

function clientIp(session: SMTPServerSession): string {
  return session.remoteAddress.replace(/^::ffff:/, '');
}

/**
 * The header From's one address, lower-cased, or null: none, several (in one header or in two
 * From headers: which one a mail program shows differs), or not an address.
 */
function fromAddress(parsed: ParsedMail): string | null {
  if (parsed.headerLines.filter((line) => line.key === 'from').length !== 1) return null;
  const addresses = (parsed.from?.value ?? []).filter((each) => each.address);
  if (addresses.length !== 1) return null;
  const address = addresses[0]!.address!.toLowerCase();
  return emailAddressProblem(address) === null ? address : null;
}

/** A header's first value as text, or undefined when the message has none. */
function headerText(parsed: ParsedMail, name: string): string | undefined {
  const line = parsed.headerLines.find((each) => each.key === name);
  return line ? line.line.slice(line.line.indexOf(':') + 1).trim() : undefined;
}

/**
 * The Message-ID with angle brackets; a message without one (or with one no mail system would
 * write) is known by the SHA-256 of its bytes, so its retry is still the same message.
 */
function messageIdOf(parsed: ParsedMail, raw: Buffer): string {
  const id = parsed.messageId?.trim();
  if (id && id.length <= 250 && /^<[^\s<>]+>$/.test(id)) return id;
  return `<${createHash('sha256').update(raw).digest('hex')}@message-hash.invalid>`;
}
