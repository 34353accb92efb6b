/**
 * A message the SMTP door took and checked, as the mailgate (server/email/mailgate.ts) and the
 * email invites read it. Addresses are lower-case; text is the new text only (quoted history
 * and signatures removed, server/email/new-text.ts).
 */
export interface InboundMail {
  /** Message-ID with angle brackets (one made from the message's hash when it had none). */
  messageId: string;
  /** The recipient it was taken for (one message per recipient). */
  recipient: string;
  /** The header From's address (lower-case), or null when it had none. */
  from: string | null;
  /** The SMTP envelope's MAIL FROM ('' for a bounce). */
  envelopeFrom: string;
  remoteIp: string;
  /** Subject with `Re:`/`Fwd:` prefixes removed and trimmed. */
  subject: string;
  /** The new text of the plain-text body (or of the HTML made text). */
  text: string;
  /** In-Reply-To and References, for threading answers and finding what a reply answers. */
  inReplyTo: string | null;
  references: string[];
  attachments: { filename: string; contentType: string; content: Buffer }[];
  auth: SenderAuth;
}

/**
 * The sender-authentication verdict (mailauth): SPF, DKIM and DMARC results, and whether the
 * From domain is aligned (DMARC pass). Any look-up that failed or timed out is `temperror`,
 * never a pass.
 */
export interface SenderAuth {
  spf: string;
  dkim: string;
  dmarc: string;
  /** DMARC passed for the From address's domain: the only verdict a command that changes anything runs on at once. */
  aligned: boolean;
}

/** Where the door hands each checked message, by the kind of its recipient. */
export interface MailRouter {
  /** Mail for MAIL_JOIN_ADDRESS: sign-ups and their codes. */
  join(mail: InboundMail): Promise<void>;
  /** Mail for an agent's private address. */
  agent(mail: InboundMail, agentId: string): Promise<void>;
  /** A reply to an email invite (`invite-<key>@MAIL_DOMAIN`). */
  invite(mail: InboundMail, key: string): Promise<void>;
  /** Mail for service@MAIL_DOMAIN (a reply to mail that asks for none): where to write. */
  service(mail: InboundMail): Promise<void>;
}
