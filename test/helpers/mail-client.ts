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
  } finally {
    transport.close();
  }
}
