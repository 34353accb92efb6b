/**
 * What the email capability is told at start-up (server/config.ts, mailSettings): addresses
 * are lower-case.
 */
export interface MailSettings {
  /** The domain of private agent addresses, the sign-up address and the service's own. */
  readonly domain: string;
  /** Where sign-ups by email go (MAIL_JOIN_ADDRESS, default join@domain). */
  readonly joinAddress: string;
  /** Where outgoing mail is handed (SMTP_URL); null: it stays in the outbox table. */
  readonly smtpUrl: string | null;
  /** The largest message the SMTP door takes. */
  readonly maxMessageBytes: number;
  /** DNS servers for SPF, DKIM and DMARC checks (`host` or `host:port`); empty: the system's. */
  readonly dnsServers: readonly string[];
  /** One DNS look-up's time limit; past it a check is `temperror`, never a pass. */
  readonly dnsTimeoutMs: number;
  /** Sign-ups by email one sender address may start an hour (0: no limit). */
  readonly signUpLimitPerHour: number;
}

/** The address the service's own mail comes from (and bounces go to). */
export function serviceAddress(settings: MailSettings): string {
  return `service@${settings.domain}`;
}
