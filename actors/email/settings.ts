import type { CapabilitySettings, EnvReader } from '../kernel/settings.ts';
import { StartRefusal } from '../kernel/settings.ts';

/**
 * What the email capability is told at start-up (emailSettings below, from the environment):
 * addresses are lower-case.
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
  /** Sign-ups by email all senders together may start an hour (0: no limit). */
  readonly signUpLimitTotalPerHour: number;
}

/** The address the service's own mail comes from (and bounces go to). */
export function serviceAddress(settings: MailSettings): string {
  return `service@${settings.domain}`;
}

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** The sign-up address; default join@ the mail domain. */
    mailJoinAddress: string | undefined;
    /** The domain of private agent addresses and the sign-up address; default BASE_URL's host. */
    mailDomain: string | undefined;
    /** Where outgoing mail goes (`smtp://user:pass@host:port`); unset: the outbox table only. */
    smtpUrl: string | undefined;
    /** The largest message the SMTP door takes (bytes; refused at DATA past it). */
    mailMaxMessageBytes: number;
    /** DNS servers (`host` or `host:port`) for SPF, DKIM and DMARC checks; empty: the system's. */
    mailDnsServers: string[];
    /** How long one DNS look-up of those checks may take; past it the check is `temperror`. */
    mailDnsTimeoutMs: number;
    /** Sign-ups by email one sender address may start in an hour (0: no limit). */
    mailSignUpLimitPerHour: number;
    /** Sign-ups by email all senders together may start in an hour (0: no limit). */
    mailSignUpLimitTotalPerHour: number;
  }
}

/** SMTP_URL: an smtp:// or smtps:// URL, or unset (mail stays in the outbox table). */
function smtpUrl(env: EnvReader): string | undefined {
  const text = env.text('SMTP_URL');
  if (text === undefined) return undefined;
  let protocol = '';
  try {
    protocol = new URL(text).protocol;
  } catch {
    protocol = '';
  }
  if (protocol !== 'smtp:' && protocol !== 'smtps:')
    throw new StartRefusal(
      'SMTP_URL takes smtp://user:pass@host:port (or smtps://), not that value',
    );
  return text;
}

/**
 * What the email capability reads from the environment, and its MailSettings (./settings.ts):
 * the domain and the sign-up address default to BASE_URL's host, lower-case.
 */
export const emailSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['MAIL_JOIN_ADDRESS'],
      default: '`join@MAIL_DOMAIN`',
      meaning: "the email interface's sign-up address",
    },
    {
      variables: ['MAIL_DOMAIN'],
      default: "BASE_URL's host",
      meaning:
        "domain of agents' private addresses, the sign-up address and `service@` (the service's From)",
    },
    {
      variables: ['SMTP_URL'],
      default: 'unset',
      meaning:
        'relay for outgoing mail, `smtp://user:pass@host:port`; unset: mail stays in `mail_outbox` (logged)',
    },
    {
      variables: ['MAIL_MAX_MESSAGE_BYTES'],
      default: '`26214400`',
      meaning: 'the largest message the SMTP door takes (25 MiB); larger ones are refused at DATA',
    },
    {
      variables: ['MAIL_DNS_SERVERS'],
      default: "unset (the system's)",
      meaning:
        'DNS servers (`host[:port]`, comma list) for SPF, DKIM and DMARC checks of incoming mail',
    },
    {
      variables: ['MAIL_DNS_TIMEOUT_MS'],
      default: '`2000`',
      meaning: 'one DNS look-up of those checks; past it the check is `temperror`, never a pass',
    },
    {
      variables: ['MAIL_SIGNUP_LIMIT_PER_HOUR'],
      default: '`5`',
      meaning: 'sign-ups by email one sender address may start an hour (0: no limit)',
    },
    {
      variables: ['MAIL_SIGNUP_LIMIT_TOTAL_PER_HOUR'],
      default: '`60`',
      meaning: 'sign-ups by email all senders together may start an hour (0: no limit)',
    },
  ],
  read: (env) => ({
    mailJoinAddress: env.raw('MAIL_JOIN_ADDRESS'),
    mailDomain: env.text('MAIL_DOMAIN'),
    smtpUrl: smtpUrl(env),
    mailMaxMessageBytes: env.positive('MAIL_MAX_MESSAGE_BYTES', 25 * 1024 * 1024),
    mailDnsServers: env.list('MAIL_DNS_SERVERS'),
    mailDnsTimeoutMs: env.positive('MAIL_DNS_TIMEOUT_MS', 2000),
    mailSignUpLimitPerHour: env.integer('MAIL_SIGNUP_LIMIT_PER_HOUR', 5),
    mailSignUpLimitTotalPerHour: env.integer('MAIL_SIGNUP_LIMIT_TOTAL_PER_HOUR', 60),
  }),
  services: (config, { baseUrl }) => {
    const domain = (config.mailDomain ?? new URL(baseUrl).hostname).toLowerCase();
    const joinAddress = (config.mailJoinAddress ?? `join@${domain}`).toLowerCase();
    return {
      mailJoinAddress: joinAddress,
      mail: {
        domain,
        joinAddress,
        smtpUrl: config.smtpUrl ?? null,
        maxMessageBytes: config.mailMaxMessageBytes,
        dnsServers: config.mailDnsServers,
        dnsTimeoutMs: config.mailDnsTimeoutMs,
        signUpLimitPerHour: config.mailSignUpLimitPerHour,
        signUpLimitTotalPerHour: config.mailSignUpLimitTotalPerHour,
      },
    };
  },
};
