import { mailAccountOf } from '../../actors/email/accounts.ts';
import { serviceAddress, type MailSettings } from '../../actors/email/settings.ts';
import { findInviteByMailKey } from '../../actors/workspaces/email-invites.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { MAX_EMAIL_ADDRESS_LENGTH } from '../../protocol/email/address.ts';

/**
 * What an address the door takes mail for is: the sign-up address, an agent's, an invite's, or
 * the service's own (service@: answered with where to write, never lost in silence).
 */
export type Recipient =
  | { kind: 'join' }
  | { kind: 'agent'; agentId: string }
  | { kind: 'invite'; key: string }
  | { kind: 'service' };

/** A private local part (actors/email/accounts.ts): `a-` and 32 base32 characters. */
const PRIVATE_LOCAL_PART = /^a-[a-z2-7]{32}$/;
/** An invite's reply address: `invite-` and its random key (URL-safe characters only). */
const INVITE_LOCAL_PART = /^invite-([A-Za-z0-9_-]{16,128})$/;

/**
 * What `address` (as RCPT TO gave it) is, or null: the door takes mail only for its own domain's
 * join address, service@, an existing agent's private address and a pending invite's reply address, and
 * refuses every other recipient at RCPT, so it is never an open relay. Each kind is matched
 * exactly (the join address as configured, `a-` + 32 base32 characters, `invite-` + key), so
 * nothing else gets through; spaces and control characters are refused before any look-up. The
 * domain is compared as configured, so a domain that is an address (MAIL_DOMAIN unset on
 * 127.0.0.1) works too.
 */
export async function recipientOf(
  services: Services,
  settings: MailSettings,
  address: string,
): Promise<Recipient | null> {
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (address.length > MAX_EMAIL_ADDRESS_LENGTH || /[\s\u0000-\u001f\u007f<>"\\]/.test(address))
    return null;
  const at = address.lastIndexOf('@');
  const local = address.slice(0, at);
  const domain = address.slice(at + 1).toLowerCase();
  if (domain !== settings.domain) return null;
  if (`${local.toLowerCase()}@${domain}` === settings.joinAddress) return { kind: 'join' };
  // The From of the service's own mail: a reply to it is answered with where to write.
  if (`${local.toLowerCase()}@${domain}` === serviceAddress(settings)) return { kind: 'service' };
  if (PRIVATE_LOCAL_PART.test(local.toLowerCase())) {
    const account = await mailAccountOf(services.db(), local.toLowerCase());
    return account ? { kind: 'agent', agentId: account.agentId } : null;
  }
  // The invite key is random and case-sensitive: it is matched as written.
  const invite = INVITE_LOCAL_PART.exec(local);
  if (invite) {
    const found = await findInviteByMailKey(
      services.db(),
      invite[1]!,
      new Date(services.clock.now()),
    );
    return found ? { kind: 'invite', key: invite[1]! } : null;
  }
  return null;
}
