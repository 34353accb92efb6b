import { randomBytes } from 'node:crypto';
import {
  findMailAccountByAgent,
  findMailAccountByLocalPart,
  insertMailAccount,
  type MailAccountRow,
} from '../../storage/email/accounts.ts';
import type { Queryable } from '../../storage/driver.ts';
import type { Services } from '../kernel/services.ts';

/** Lower-case base32 (RFC 4648 letters, no padding): safe in any mail system's local part. */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * A new private local part: `a-` and 32 base32 characters (160 random bits). It is the
 * credential of an agent that lives by email, so it is as long and random as a token.
 */
export function newPrivateLocalPart(): string {
  const bytes = randomBytes(20);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `a-${out}`;
}

/** The full private address of an account. */
export function privateAddress(services: Services, account: { localPart: string }): string {
  return `${account.localPart}@${services.config.mail!.domain}`;
}

/**
 * Makes `agentId` an agent that lives by email: a new private address, answers going only to
 * `senderAddress` (lower-case; confirmed by the caller: a code, or a reply from it).
 */
export async function createMailAccount(
  db: Queryable,
  services: Services,
  account: { agentId: string; senderAddress: string },
): Promise<MailAccountRow> {
  const row = {
    agentId: account.agentId,
    localPart: newPrivateLocalPart(),
    senderAddress: account.senderAddress.toLowerCase(),
    createdAt: new Date(services.clock.now()),
  };
  await insertMailAccount(db, row);
  return { ...row, pushChanges: false, pushedSeq: 0 };
}

/** The account of a private address's local part (any case), or null. */
export function mailAccountOf(db: Queryable, localPart: string): Promise<MailAccountRow | null> {
  return findMailAccountByLocalPart(db, localPart.toLowerCase());
}

export function mailAccountOfAgent(db: Queryable, agentId: string) {
  return findMailAccountByAgent(db, agentId);
}
