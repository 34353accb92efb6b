import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { onTestsEnd } from './resources.ts';

/** One message the sink took, as it came (raw) and parsed. */
export interface SunkMail {
  envelope: { from: string; to: string[] };
  raw: Buffer;
  parsed: ParsedMail;
  /** Message-ID with angle brackets. */
  messageId: string;
  subject: string;
  text: string;
  /** A header's value as text ('' when absent), by lower-case name. */
  header(name: string): string;
}

export interface MailSink {
  port: number;
  /** What SMTP_URL names to send here. */
  url: string;
  mails: SunkMail[];
  /** The first message (already taken or still to come) that `match` accepts. */
  waitFor(match: (mail: SunkMail) => boolean, what: string, timeoutMs?: number): Promise<SunkMail>;
  close(): Promise<void>;
}

/**
 * A second, independent SMTP server standing in for a person's mailbox (and for the relay of
 * SMTP_URL): it takes every message and keeps it parsed. `refuse` makes it answer a message
 * with an SMTP error instead (a relay that fails), by the message's recipient.
 */
export async function startMailSink(
  options: { refuse?: (to: string) => { code: number; message: string } | undefined } = {},
): Promise<MailSink> {
  const mails: SunkMail[] = [];
  const events = new EventEmitter();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    // No reverse DNS look-up of each client (smtp-server's default): it can wait a second.
    disableReverseLookup: true,
    logger: false,
    onRcptTo(address, _session, callback) {
      const refused = options.refuse?.(address.address.toLowerCase());
      if (refused) {
        const error = new Error(refused.message) as Error & { responseCode: number };
        error.responseCode = refused.code;
        return callback(error);
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then(
          (parsed) => {
            const mail: SunkMail = {
              envelope: {
                from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
                to: session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase()),
              },
              raw,
              parsed,
              messageId: parsed.messageId ?? '',
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              header: (name) => {
                const line = parsed.headerLines.find((each) => each.key === name.toLowerCase());
                return line ? line.line.slice(line.line.indexOf(':') + 1).trim() : '';
              },
            };
            mails.push(mail);
            events.emit('mail', mail);
            callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  onTestsEnd(close);
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    mails,
    close,
    waitFor(match, what, timeoutMs = 10_000) {
      const found = mails.find(match);
      if (found) return Promise.resolve(found);
      return new Promise<SunkMail>((resolve, reject) => {
        const timer = setTimeout(() => {
          events.off('mail', listener);
          reject(
            new Error(
              `no mail ${what} within ${timeoutMs} ms; the sink has: ${mails.map((mail) => `${mail.envelope.to.join(',')} "${mail.subject}"`).join('; ') || 'nothing'}`,
            ),
          );
        }, timeoutMs);
        const listener = (mail: SunkMail) => {
          if (!match(mail)) return;
          clearTimeout(timer);
          events.off('mail', listener);
          resolve(mail);
        };
        events.on('mail', listener);
      });
    },
  };
}
