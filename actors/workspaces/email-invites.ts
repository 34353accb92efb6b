import { createHash, randomBytes } from 'node:crypto';
import { shownStatus } from '../../machines/invite.ts';
import type { Queryable } from '../../storage/driver.ts';
import { findInviteByMailKeyHash } from '../../storage/workspaces/invites.ts';

/** A pending email invite found by the key of its reply address (invite-<key>@MAIL_DOMAIN). */
export interface EmailInvite {
  inviteId: string;
  workspaceId: string;
  /** The invited address, lower-case: replies count only from it. */
  email: string;
  /** The agent that sent the invite. */
  createdBy: string;
  expiresAt: Date;
}

/** Email invites one agent may send an hour: the service must not be a way to spam people. */
export const EMAIL_INVITES_PER_HOUR = 20;

/** How long an agent counts as new: its email invites are held to NEW_AGENT_EMAIL_INVITES. */
export const NEW_AGENT_MS = 24 * 60 * 60 * 1000;
/**
 * Email invites a new agent may send in all before it is a day old. Agents are cheap to make
 * (sign-ups are limited per address, not per person): without this, each fresh one could mail
 * twenty people an hour with its own note.
 */
export const NEW_AGENT_EMAIL_INVITES = 3;

/** The local part's prefix of an invite's reply address: `invite-<key>@MAIL_DOMAIN`. */
const INVITE_REPLY_PREFIX = 'invite-';

/** A key is 40 lower-case hex characters (160 random bits): safe in any mail system's local part. */
const MAIL_KEY = /^[0-9a-f]{40}$/;

/** A new reply-address key; only its SHA-256 is kept (mailKeyHash). */
export function newMailKey(): string {
  return randomBytes(20).toString('hex');
}

/** What the invites table keeps of a key: its SHA-256, hex. */
export function mailKeyHash(key: string): string {
  return createHash('sha256').update(key.toLowerCase()).digest('hex');
}

/** The reply address of an email invite. */
export function inviteReplyAddress(domain: string, key: string): string {
  return `${INVITE_REPLY_PREFIX}${key}@${domain}`;
}

/**
 * The pending, unexpired email invite whose reply-address key is `key` (any case), or null:
 * the SMTP door takes mail for `invite-<key>` only while this finds one (550 at RCPT
 * otherwise), and a reply acts only on what this finds when it is read.
 */
export async function findInviteByMailKey(
  db: Queryable,
  key: string,
  now: Date,
): Promise<EmailInvite | null> {
  const lower = key.toLowerCase();
  if (!MAIL_KEY.test(lower)) return null;
  const row = await findInviteByMailKeyHash(db, mailKeyHash(lower));
  if (!row || row.email === null) return null;
  if (shownStatus(row.status, row.expiresAt.getTime(), now.getTime()) !== 'pending') return null;
  return {
    inviteId: row.inviteId,
    workspaceId: row.workspaceId,
    email: row.email,
    createdBy: row.createdBy,
    expiresAt: row.expiresAt,
  };
}
