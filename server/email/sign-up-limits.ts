import type { Services } from '../../actors/kernel/services.ts';
import { requestLimiter, type RequestLimiter } from '../http/rate-limit.ts';
import type { InboundMail } from './inbound.ts';

/**
 * The limits every sign-up that arrives by mail counts against, whichever mail door makes the
 * agent (the join address, a reply to an email invite, the `sign_up` command).
 */
export interface MailSignUpLimits {
  /**
   * The very limiter HTTP and MCP sign-ups take (SIGNUP_LIMIT_PER_HOUR per caller address), fed
   * the SMTP client's address: one limit whatever the door.
   */
  perAddress: RequestLimiter;
  /**
   * Sign-ups by mail from all senders together (MAIL_SIGNUP_LIMIT_TOTAL_PER_HOUR): the SMTP
   * client is a mail provider's relay, shared by many people and many addresses, so the
   * per-address limit alone cannot hold one sender who writes from many relays.
   */
  total: RequestLimiter;
}

/**
 * The limits of sign-ups by mail: `perAddress`, the HTTP and MCP doors' own limiter, and one of
 * all mail (MAIL_SIGNUP_LIMIT_TOTAL_PER_HOUR, the email capability's setting), counted as the
 * doors count (`limiting`: the clock, shared credit across processes).
 */
export function mailSignUpLimits(
  services: Services,
  perAddress: RequestLimiter,
  limiting: Parameters<typeof requestLimiter>[2],
): MailSignUpLimits {
  const totalPerHour = services.config.mail?.signUpLimitTotalPerHour ?? 0;
  return {
    perAddress,
    total: requestLimiter(
      'mail-sign-ups',
      { limit: totalPerHour || Infinity, windowSeconds: 3600 },
      limiting,
    ),
  };
}

/** The one bucket of `total`: all sign-ups by mail. */
const ALL_MAIL = 'mail';

/**
 * Takes one sign-up of both limits for `mail`, or throws `rate_limited` (a RateLimited: the
 * caller decides whether to answer it). Without limits (a router built by a test): admits.
 */
export async function admitMailSignUp(
  limits: MailSignUpLimits | undefined,
  mail: Pick<InboundMail, 'remoteIp'>,
): Promise<void> {
  if (!limits) return;
  // A Peer, so the address goes through the HTTP doors' own reading (IPv4-mapped forms,
  // TRUSTED_PROXIES); the SMTP session has no forwarding header: the connecting address counts.
  await limits.perAddress.take({ remoteAddress: mail.remoteIp, headers: {} });
  await limits.total.take(ALL_MAIL);
}
