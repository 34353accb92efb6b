import { createTransport } from 'nodemailer';

/** A message as a person's (or an agent's) mail program sends it. */
export interface OutgoingMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  messageId?: string;
  inReplyTo?: string;
  references?: string[];
  headers?: Record<string, string>;
  attachments?: { filename: string; content: Buffer | string; contentType?: string }[];
  /** DKIM-sign it (nodemailer's signer) with this key, as `selector._domainkey.domain`. */
  dkim?: { domainName: string; keySelector: string; privateKey: string };
  /** The envelope's MAIL FROM when it is not `from`. */
  envelopeFrom?: string;
}

/**
 * Sends one message to the service's SMTP door with nodemailer, as a real client does (EHLO,
 * MAIL, RCPT, DATA). Resolves with the door's answer; rejects with the SMTP refusal (its
 * `responseCode`) when the door refuses.
 */
export async function sendToService(
  smtpPort: number,
  mail: OutgoingMail,
): Promise<{ response: string; messageId: string }> {
  const transport = createTransport({
    host: '127.0.0.1',
    port: smtpPort,
    secure: false,
    ignoreTLS: true,
    ...(mail.dkim ? { dkim: mail.dkim } : {}),
  });
  try {
    return await sendOn(transport, mail);
  } finally {
    transport.close();
  }
}

/** One SMTP connection that sends message after message, as a mail program sends a batch. */
export interface MailSession {
  /** Sends one message (RSET, MAIL, RCPT, DATA on the open connection); as sendToService. */
  send(mail: Omit<OutgoingMail, 'dkim'>): Promise<{ response: string; messageId: string }>;
  close(): void;
}

/**
 * A session of many messages on one connection to the service's SMTP door. The door (its
 * smtp-server) waits 100 ms before it greets each new connection, to catch clients that talk
 * too soon: a suite that sends a hundred messages one connection each waits ten seconds.
 */
export function openMailSession(smtpPort: number): MailSession {
  const transport = createTransport({
    host: '127.0.0.1',
    port: smtpPort,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: 1,
    maxMessages: Infinity,
  });
  return { send: (mail) => sendOn(transport, mail), close: () => transport.close() };
}

async function sendOn(
  transport: ReturnType<typeof createTransport>,
  mail: OutgoingMail,
): Promise<{ response: string; messageId: string }> {
  const info = await transport.sendMail({
    from: mail.from,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    ...(mail.messageId ? { messageId: mail.messageId } : {}),
    ...(mail.inReplyTo ? { inReplyTo: mail.inReplyTo } : {}),
    ...(mail.references ? { references: mail.references } : {}),
    ...(mail.headers ? { headers: mail.headers } : {}),
    ...(mail.attachments ? { attachments: mail.attachments } : {}),
    ...(mail.envelopeFrom ? { envelope: { from: mail.envelopeFrom, to: mail.to } } : {}),
  });
  return { response: String(info.response), messageId: String(info.messageId) };
}
