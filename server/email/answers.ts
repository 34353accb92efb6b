import type { MailKind } from '../../actors/email/mail-kinds.ts';
import { mailYaml } from '../../actors/email/mail-yaml.ts';
import { enqueueMail } from '../../actors/email/outbox.ts';
import type { Services } from '../../actors/kernel/services.ts';
import type { InboundMail } from './inbound.ts';

/** The largest attachment an answer carries (a byte reply past it answers a problem). */
export const MAX_ANSWER_ATTACHMENT_BYTES = 10 * 1024 * 1024;

/** A subject as one line of ours: no control characters, bounded. */
function safeSubject(subject: string): string {
  // eslint-disable-next-line no-control-regex
  return subject.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 200);
}

/** A value as the YAML an answer carries (what agents or people wrote stays a YAML value). */
export function asYaml(value: unknown): string {
  return mailYaml(value);
}

/**
 * Answers `mail` threaded (In-Reply-To, References, `Re: <subject>`), marked as an automatic
 * reply, to `to` only: the address an account signed up from, never a new From. Its Reply-To is
 * the address `mail` was written to (the door took it, so a reply reaches it) unless `replyTo`
 * names another.
 */
export function answer(
  services: Services,
  mail: InboundMail,
  to: string,
  reply: {
    kind?: MailKind;
    agentId?: string | null;
    replyTo?: string;
    text: string;
    idKey?: string;
    attachments?: { filename: string; content: Uint8Array; contentType?: string }[];
  },
) {
  return enqueueMail(services.db(), services, {
    kind: reply.kind ?? 'answer',
    agentId: reply.agentId ?? null,
    to,
    replyTo: reply.replyTo ?? mail.recipient,
    subject: `Re: ${safeSubject(mail.subject)}`,
    text: reply.text,
    inReplyTo: mail.messageId,
    references: [...mail.references, mail.messageId].slice(-20),
    autoSubmitted: 'auto-replied',
    ...(reply.idKey === undefined ? {} : { idKey: reply.idKey }),
    ...(reply.attachments === undefined ? {} : { attachments: reply.attachments }),
  });
}
