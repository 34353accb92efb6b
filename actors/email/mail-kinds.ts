/**
 * Every kind of mail the service sends, and whether it asks its reader to reply. A kind that
 * asks carries a Reply-To the SMTP door takes (the join address, the agent's private address,
 * the invite's reply address); one that does not comes from service@MAIL_DOMAIN, whose mail is
 * answered with where to write instead. test/email/mail-replies-every-kind.test.ts replies to
 * each asking kind as a mail program does, so a kind added here without a row there fails it.
 */
export const MAIL_KINDS = {
  /** An answer to a command at an agent's private address: a reply is the next command. */
  answer: { asksForReply: true },
  /** A sign-up's 6-digit code: the reply carries it back to the join address. */
  sign_up_code: { asksForReply: true },
  /** A sign-up refused or a wrong code: the reply tries again at the join address. */
  sign_up_refused: { asksForReply: true },
  /** A sign-up done: a reply goes to the new private address (a command). */
  sign_up_done: { asksForReply: true },
  /** A held command: the reply (DMARC-aligned) carries it out. */
  confirmation_request: { asksForReply: true },
  /** An email invite: the reply (`name:` or `agent_id:`) joins. */
  invite: { asksForReply: true },
  /** An answer to a reply to an invite: a reply tries again while the invite is pending. */
  invite_answer: { asksForReply: true },
  /** The answer to mail sent to service@: says where to write. */
  service_answer: { asksForReply: false },
  /** A change pushed to an agent that lives by email. */
  change: { asksForReply: false },
  /** The code that confirms a notification email (entered on the web or over the API). */
  notification_confirm: { asksForReply: false },
  /** A notification digest. */
  digest: { asksForReply: false },
} as const satisfies Record<string, { asksForReply: boolean }>;

export type MailKind = keyof typeof MAIL_KINDS;
