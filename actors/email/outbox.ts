import { randomUUID } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { insertOutboxMail } from '../../storage/email/outbox.ts';
import type { Queryable } from '../../storage/driver.ts';
import { currentUnit } from '../kernel/commit.ts';
import type { Services } from '../kernel/services.ts';
import type { MailKind } from './mail-kinds.ts';
import { serviceAddress } from './settings.ts';

/** local@domain with nothing that could end an address in a header or split the envelope. */
const PLAIN_ADDRESS =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /^[^\s\u0000-\u001f\u007f<>()[\],;:"\\@]+@[^\s\u0000-\u001f\u007f<>()[\],;:"\\@]+$/;

/** A message to send, as the capability's parts write it; outbox.ts builds and queues it. */
export interface MailDraft {
  /** What it is, for the outbox and the logs (mail-kinds.ts: whether it asks for a reply). */
  kind: MailKind;
  /** The agent it concerns, when there is one. */
  agentId?: string | null;
  /** One address. Never one the message's own input named without a confirmation first. */
  to: string;
  subject: string;
  /** Plain text; every message has it. Text other agents wrote stays inside marked fields. */
  text: string;
  html?: string;
  /** Defaults to the service's own address (service@MAIL_DOMAIN). */
  from?: string;
  /** Where a reply goes: an address the SMTP door takes, for every kind that asks for one. */
  replyTo?: string;
  /** Threading: the Message-ID (with angle brackets) this answers. */
  inReplyTo?: string;
  references?: string[];
  /**
   * The Message-ID's local part when the message must be queued at most once (a change pushed
   * by two processes: `change-<event_id>`); random otherwise.
   */
  idKey?: string;
  /** Marks automatic mail (RFC 3834): `auto-replied` for answers, else `auto-generated`. */
  autoSubmitted?: 'auto-replied' | 'auto-generated';
  /** An unsubscribe URL: the List-Unsubscribe and List-Unsubscribe-Post (one-click) headers. */
  unsubscribeUrl?: string;
  attachments?: { filename: string; content: Uint8Array; contentType?: string }[];
}

/** What was queued: its Message-ID (angle brackets included), and false when already queued. */
export interface QueuedMail {
  messageId: string;
  queued: boolean;
}

/**
 * Builds the whole message (headers, body, Message-ID, Date) and queues it in `db`, in the
 * caller's transaction when it has one: a message leaves only if what it tells was committed.
 * The sender (sender.ts) takes it from there.
 */
export async function enqueueMail(
  db: Queryable,
  services: Services,
  draft: MailDraft,
): Promise<QueuedMail> {
  const settings = services.config.mail!;
  const from = draft.from ?? serviceAddress(settings);
  // Callers pass addresses checked at their door (protocol/email/address.ts); this is the last
  // line before the envelope and the headers: one plain address each, or a bug that must not
  // reach the relay (a line break or a comma would add a header or a recipient).
  for (const address of [draft.to, from, ...(draft.replyTo === undefined ? [] : [draft.replyTo])]) {
    if (!PLAIN_ADDRESS.test(address))
      throw new Error(`enqueueMail: not one plain address: ${JSON.stringify(address)}`);
  }
  const localPart = draft.idKey ?? randomUUID();
  const messageId = `<${localPart}@${settings.domain}>`;
  const now = new Date(services.clock.now());
  const headers: Record<string, string> = {
    'Auto-Submitted': draft.autoSubmitted ?? 'auto-generated',
  };
  if (draft.unsubscribeUrl) {
    headers['List-Unsubscribe'] = `<${draft.unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  const raw = await new MailComposer({
    from,
    to: draft.to,
    subject: draft.subject,
    text: draft.text,
    ...(draft.html === undefined ? {} : { html: draft.html }),
    ...(draft.replyTo === undefined ? {} : { replyTo: draft.replyTo }),
    ...(draft.inReplyTo === undefined ? {} : { inReplyTo: draft.inReplyTo }),
    ...(draft.references === undefined ? {} : { references: draft.references }),
    messageId,
    date: now,
    headers,
    attachments: (draft.attachments ?? []).map((attachment) => ({
      filename: attachment.filename,
      content: Buffer.from(attachment.content),
      ...(attachment.contentType === undefined ? {} : { contentType: attachment.contentType }),
    })),
    // Addresses and headers are encoded by the composer; nothing written by a caller becomes a
    // header of its own (a CR or LF in a subject is folded into the subject, not a new line).
    disableFileAccess: true,
    disableUrlAccess: true,
  })
    .compile()
    .build();
  const queued = await insertOutboxMail(db, {
    mailId: randomUUID(),
    messageId: messageId.slice(1, -1),
    kind: draft.kind,
    agentId: draft.agentId ?? null,
    envelopeFrom: serviceAddress(settings),
    recipient: draft.to,
    raw,
    createdAt: now,
  });
  if (queued) {
    // Told (logged or sent) once the caller's work is committed, when it runs in a unit of work;
    // a rolled-back request leaves no mail and no log line. Otherwise at once (the sender's poll
    // finds a row whose transaction commits a moment later).
    const announce = () =>
      services.mailSender?.queued({
        kind: draft.kind,
        recipient: draft.to,
        messageId: messageId.slice(1, -1),
      });
    const unit = currentUnit();
    if (unit?.isOpen) unit.onCommit(announce);
    else announce();
  }
  return { messageId, queued };
}
