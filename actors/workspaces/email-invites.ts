import type { Queryable } from '../../storage/driver.ts';

/** A pending email invite found by the key of its reply address (invite-<key>@MAIL_DOMAIN). */
export interface EmailInvite {
  inviteId: string;
  workspaceId: string;
  /** The invited address, lower-case: replies count only from it. */
  email: string;
}

/** The pending, unexpired email invite whose reply-address key is `key` (helper H3 fills this in). */
export async function findInviteByMailKey(
  db: Queryable,
  key: string,
  now: Date,
): Promise<EmailInvite | null> {
  void db;
  void key;
  void now;
  return null;
}
