import type { BlockList } from 'node:net';
import type { Clock } from '../actors/kernel/clock.ts';
import { trustedProxies } from './http/client-address.ts';
import { StartRefusal } from './listen-error.ts';

/** Everything the service reads from its environment, in one place (README.md, "Configuration"). */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  /** Public base address for links; when unset, `http://HOST:PORT` with the bound port. */
  baseUrl: string | undefined;
  httpEngine: 'uws' | 'node' | 'auto';
  operatorName: string;
  /** When set, the operator agent signs in with this token. */
  operatorToken: string | undefined;
  termsUrl: string | undefined;
  privacyUrl: string | undefined;
  mailJoinAddress: string | undefined;
  /** The SMTP door (email-only interface, replies): `null` runs none (SMTP_PORT=off). */
  smtpHost: string;
  /** 0 picks a free port (shown in /health as smtp_port); null: no SMTP door in this process. */
  smtpPort: number | null;
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
  actorCapacity: number;
  /** Requests per minute from one address (all routes but documents and /health). */
  rateLimitPerMinute: number;
  /** Sign-ups per hour from one address. */
  signUpLimitPerHour: number;
  /**
   * TRUSTED_PROXIES: peers whose X-Forwarded-For names the caller (server/http/client-address.ts);
   * null or unset: the peer's own address is the caller's.
   */
  trustedProxies?: BlockList | null;
  /** socket.io connections one agent may hold at once. */
  socketsPerAgent: number;
  /**
   * SHUTDOWN_DRAIN_MS (default 0): after SIGTERM, how long `/health` answers 503 `draining`
   * while every request is still served, so a proxy's health check stops sending work first.
   */
  shutdownDrainMs: number;
  /**
   * SHUTDOWN_TIMEOUT_MS (default 10000): after the drain, how long requests in flight may take
   * to finish before they are aborted (new ones answer 503, parked long-polls answer at once).
   */
  shutdownTimeoutMs: number;
  /**
   * Browser origins, besides BASE_URL's own, whose requests /mcp takes (`*`: any). A request
   * with another `Origin` is refused (the MCP spec's DNS-rebinding rule).
   */
  mcpAllowedOrigins: string[];
  /** An S3-compatible bucket for file bytes (`http(s)://KEY:SECRET@host:port/bucket`); else DATA_DIR/blobs. */
  s3Url: string | undefined;
  /** Seals the receipt-signing keys at rest when set (32 random bytes, e.g. base64). */
  receiptKeySecret: string | undefined;
  /** Bytes of current files one agent may hold. */
  storageQuotaBytes: number;
  /** The time limit of one index SQL query; 0: the driver's default (2 s on PostgreSQL, 0.5 s on PGlite). */
  sqlTimeoutMs: number;
  /** Index queries that may run past that limit in any minute, per agent (0: no limit). */
  sqlTimeoutsPerAgent: number;
  /** The same for all agents together (0: no limit), so that many agents cannot do what one may not. */
  sqlTimeoutsTotal: number;
  /** Terms the store refuses in listings and conventions (comma list, case-insensitive). */
  storeDenyTerms: string[];
  /** Conventions one agent may register in all (the operator: any number); 0: no limit. */
  conventionsPerAgent: number;
  /**
   * Cron expressions replacing scheduled jobs' own, from JOB_SCHEDULE_<NAME> (NAME: the job's
   * name upper-cased, `_` for `.`), keyed by NAME. The scheduler checks them at start-up.
   */
  jobSchedules: Record<string, string>;
  /**
   * JOB_LEASE_SECONDS (default 60): how long a scheduled job's run is held by the process
   * running it without a renewal (it renews every third of it); a run whose process died is
   * taken over by another process when it runs out.
   */
  jobLeaseSeconds: number;
  /**
   * The JSON-RPC endpoints payments are checked on (CHAIN_RPC_URL or CHAIN_RPC_URLS, a comma
   * list); empty: on-chain verification is off and request_payment answers 503. With several,
   * a payment is confirmed only when every one gives the same block hash.
   */
  chainRpcUrls: string[];
  chainId: number;
  /** The USDC contract (CHAIN_ID's): the only token whose transfers are credited. */
  usdcAddress: string;
  /** Blocks, the crediting one included, before a payment is confirmed. */
  confirmations: number;
  /** How often the watcher reads new blocks (ms). */
  chainPollMs: number;
  /** How long a requested payment waits for its transfer. */
  paymentExpiryHours: number;
  /**
   * The ForwarderFactory giving each payment a deposit address: undefined for the one at the
   * same address on every chain (actors/payments/chain/factory.ts), null for none (`off`).
   */
  forwarderFactoryAddress: string | null | undefined;
  /** How long one call to a chain RPC may take before it counts as no answer (ms). */
  chainRpcTimeoutMs: number;
  /**
   * A public JSON-RPC endpoint the pay instructions suggest to payers (`rpc_url`); unset: null.
   * Never CHAIN_RPC_URL(S), which may carry the operator's API key.
   */
  publicRpcUrl: string | undefined;
  /** WEBHOOK_ALLOW_PRIVATE=1: webhooks may reach loopback and private addresses (tests, a closed network). */
  webhookAllowPrivate: boolean;
  /** WEBHOOK_TIMEOUT_MS: one webhook attempt (look-ups, redirects, answer) ends after this. */
  webhookTimeoutMs: number;
  /**
   * `address:port` pairs webhooks may reach although private; never from the environment: tests
   * let exactly one loopback receiver through, to see what it redirects to refused.
   */
  webhookAllowedTargets?: string[];
  /** Log requests that fail on the service's side (never tokens or bodies). */
  log: (message: string) => void;
  /** Time for rate limits and waits; never from the environment: tests pass a TestClock. */
  clock?: Clock;
  /**
   * Also serve the test-only operations of server/http/test-operations.ts (a temporary byte
   * store, an echo) and list them in /openapi.json. Never from the environment: only tests
   * pass it (startTestServer({ testOperations: true })).
   */
  testOperations?: boolean;
  /**
   * Holds the service to its protocol's tables: a handler that throws a code its operation does
   * not declare answers 500 (server/invoke.ts), and a change whose data its event's schema does
   * not take is not recorded (protocol/events.ts). Never from the environment: the test servers
   * turn it on, so that a test meeting either fails.
   */
  strictProtocol?: boolean;
}

/** A comma-separated list of origins (`scheme://host[:port]`), or `*`; each checked at start-up. */
function origins(value: string | undefined, name: string): string[] {
  if (value === undefined || value.trim() === '') return [];
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      if (entry === '*') return entry;
      let url: URL | undefined;
      try {
        url = new URL(entry);
      } catch {
        url = undefined;
      }
      if (!url || url.origin === 'null' || url.href.replace(/\/$/, '') !== url.origin)
        throw new StartRefusal(`${name} takes origins like https://app.example, not "${entry}"`);
      return url.origin;
    });
}

function integer(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new StartRefusal(`${name} must be a whole number, not "${value}"`);
  return n;
}

/** Base's chain id and its USDC contract: the defaults of CHAIN_ID and USDC_ADDRESS. */
const BASE_CHAIN_ID = 8453;
export const BASE_USDC_ADDRESS = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

function positive(value: string | undefined, fallback: number, name: string): number {
  const n = integer(value, fallback, name);
  if (n < 1) throw new StartRefusal(`${name} must be at least 1, not "${value}"`);
  return n;
}

function evmAddress(value: string | undefined, name: string): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const text = value.trim();
  if (!/^0x[0-9a-fA-F]{40}$/.test(text))
    throw new StartRefusal(`${name} must be an address, 0x and 40 hex digits, not "${value}"`);
  return text;
}

/** FORWARDER_FACTORY_ADDRESS: unset for the deterministic factory, `off` for none, or an address. */
function factoryAddress(value: string | undefined): string | null | undefined {
  if (value?.trim().toLowerCase() === 'off') return null;
  if (value !== undefined && value.trim() !== '' && !/^0x[0-9a-fA-F]{40}$/.test(value.trim())) {
    throw new StartRefusal(
      `FORWARDER_FACTORY_ADDRESS must be an address, 0x and 40 hex digits, or off, not "${value}"`,
    );
  }
  return evmAddress(value, 'FORWARDER_FACTORY_ADDRESS');
}

/** Whether text is an http(s) URL. */
function isHttpUrl(text: string): boolean {
  try {
    const protocol = new URL(text).protocol;
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** PUBLIC_RPC_URL: one http(s) URL, or unset. */
function publicRpcUrl(value: string | undefined): string | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  if (!isHttpUrl(text))
    throw new StartRefusal(
      `PUBLIC_RPC_URL takes the http(s) URL of a JSON-RPC endpoint, not "${text}"`,
    );
  return text;
}

/** CHAIN_RPC_URLS (a comma list) or CHAIN_RPC_URL (one), each an http(s) URL. */
function rpcUrls(env: NodeJS.ProcessEnv): string[] {
  const list = env.CHAIN_RPC_URLS?.trim() ? env.CHAIN_RPC_URLS.split(',') : undefined;
  const name = list ? 'CHAIN_RPC_URLS' : 'CHAIN_RPC_URL';
  const urls = (list ?? [env.CHAIN_RPC_URL ?? ''])
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of urls) {
    if (!isHttpUrl(entry))
      throw new StartRefusal(`${name} takes http(s) URLs of JSON-RPC endpoints, not "${entry}"`);
  }
  return urls;
}

/** SMTP_URL: an smtp:// or smtps:// URL, or unset (mail stays in the outbox table). */
function smtpUrl(value: string | undefined): string | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
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
 * What the email capability is told (its MailSettings, actors/email/settings.ts): the domain
 * and the sign-up address default to BASE_URL's host.
 */
export function mailSettings(config: Config, baseUrl: string) {
  const domain = (config.mailDomain ?? new URL(baseUrl).hostname).toLowerCase();
  return {
    domain,
    joinAddress: (config.mailJoinAddress ?? `join@${domain}`).toLowerCase(),
    smtpUrl: config.smtpUrl ?? null,
    maxMessageBytes: config.mailMaxMessageBytes,
    dnsServers: config.mailDnsServers,
    dnsTimeoutMs: config.mailDnsTimeoutMs,
    signUpLimitPerHour: config.mailSignUpLimitPerHour,
  };
}

/**
 * What the payments capability is told of the chain (its ChainSettings,
 * actors/payments/chain/clients.ts, which the doors do not import).
 */
export function chainSettings(config: Config) {
  return {
    rpcUrls: config.chainRpcUrls,
    chainId: config.chainId,
    usdc: config.usdcAddress,
    confirmations: config.confirmations,
    pollMs: config.chainPollMs,
    expiryMs: config.paymentExpiryHours * 3600_000,
    factory: config.forwarderFactoryAddress,
    rpcTimeoutMs: config.chainRpcTimeoutMs,
    publicRpcUrl: config.publicRpcUrl ?? null,
  };
}

const JOB_SCHEDULE_PREFIX = 'JOB_SCHEDULE_';

/** Every JOB_SCHEDULE_<NAME> that is set, keyed by NAME. */
function jobSchedules(env: NodeJS.ProcessEnv): Record<string, string> {
  const schedules: Record<string, string> = {};
  for (const [variable, value] of Object.entries(env)) {
    if (variable.startsWith(JOB_SCHEDULE_PREFIX) && value !== undefined && value.trim() !== '')
      schedules[variable.slice(JOB_SCHEDULE_PREFIX.length)] = value.trim();
  }
  return schedules;
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): Config {
  const engine = env.HTTP_ENGINE ?? 'auto';
  if (engine !== 'uws' && engine !== 'node' && engine !== 'auto') {
    throw new StartRefusal(`HTTP_ENGINE must be uws, node or auto, not "${engine}"`);
  }
  return {
    host: env.HOST || '127.0.0.1',
    port: integer(env.PORT, 8080, 'PORT'),
    dataDir: env.DATA_DIR || './data',
    databaseUrl: env.DATABASE_URL || undefined,
    baseUrl: env.BASE_URL?.replace(/\/+$/, '') || undefined,
    httpEngine: engine,
    operatorName: env.OPERATOR_NAME || 'service',
    operatorToken: env.OPERATOR_TOKEN || undefined,
    termsUrl: env.TERMS_URL || undefined,
    privacyUrl: env.PRIVACY_URL || undefined,
    mailJoinAddress: env.MAIL_JOIN_ADDRESS || undefined,
    smtpHost: env.SMTP_HOST || '127.0.0.1',
    smtpPort: env.SMTP_PORT === 'off' ? null : integer(env.SMTP_PORT, 2525, 'SMTP_PORT'),
    mailDomain: env.MAIL_DOMAIN?.trim() || undefined,
    smtpUrl: smtpUrl(env.SMTP_URL),
    mailMaxMessageBytes: positive(
      env.MAIL_MAX_MESSAGE_BYTES,
      25 * 1024 * 1024,
      'MAIL_MAX_MESSAGE_BYTES',
    ),
    mailDnsServers: (env.MAIL_DNS_SERVERS ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
    mailDnsTimeoutMs: positive(env.MAIL_DNS_TIMEOUT_MS, 2000, 'MAIL_DNS_TIMEOUT_MS'),
    mailSignUpLimitPerHour: integer(
      env.MAIL_SIGNUP_LIMIT_PER_HOUR,
      5,
      'MAIL_SIGNUP_LIMIT_PER_HOUR',
    ),
    mailSignUpLimitTotalPerHour: integer(
      env.MAIL_SIGNUP_LIMIT_TOTAL_PER_HOUR,
      60,
      'MAIL_SIGNUP_LIMIT_TOTAL_PER_HOUR',
    ),
    actorCapacity: integer(env.ACTOR_CAPACITY, 10_000, 'ACTOR_CAPACITY'),
    rateLimitPerMinute: integer(env.RATE_LIMIT_PER_MINUTE, 1200, 'RATE_LIMIT_PER_MINUTE'),
    signUpLimitPerHour: integer(env.SIGNUP_LIMIT_PER_HOUR, 30, 'SIGNUP_LIMIT_PER_HOUR'),
    trustedProxies: trustedProxies(env.TRUSTED_PROXIES),
    shutdownDrainMs: integer(env.SHUTDOWN_DRAIN_MS, 0, 'SHUTDOWN_DRAIN_MS'),
    shutdownTimeoutMs: integer(env.SHUTDOWN_TIMEOUT_MS, 10_000, 'SHUTDOWN_TIMEOUT_MS'),
    socketsPerAgent: integer(env.SOCKETS_PER_AGENT, 20, 'SOCKETS_PER_AGENT'),
    mcpAllowedOrigins: origins(env.MCP_ALLOWED_ORIGINS, 'MCP_ALLOWED_ORIGINS'),
    s3Url: env.S3_URL || undefined,
    receiptKeySecret: env.RECEIPT_KEY_SECRET || undefined,
    storageQuotaBytes: integer(env.STORAGE_QUOTA_BYTES, 1024 ** 3, 'STORAGE_QUOTA_BYTES'),
    sqlTimeoutMs: integer(env.SQL_TIMEOUT_MS, 0, 'SQL_TIMEOUT_MS'),
    sqlTimeoutsPerAgent: integer(env.SQL_TIMEOUTS_PER_AGENT, 3, 'SQL_TIMEOUTS_PER_AGENT'),
    sqlTimeoutsTotal: integer(env.SQL_TIMEOUTS_TOTAL, 30, 'SQL_TIMEOUTS_TOTAL'),
    conventionsPerAgent: integer(env.CONVENTIONS_PER_AGENT, 20, 'CONVENTIONS_PER_AGENT'),
    storeDenyTerms: (env.STORE_DENY_TERMS ?? '')
      .split(',')
      .map((term) => term.trim())
      .filter(Boolean),
    jobSchedules: jobSchedules(env),
    jobLeaseSeconds: positive(env.JOB_LEASE_SECONDS, 60, 'JOB_LEASE_SECONDS'),
    chainRpcUrls: rpcUrls(env),
    chainId: positive(env.CHAIN_ID, BASE_CHAIN_ID, 'CHAIN_ID'),
    usdcAddress: evmAddress(env.USDC_ADDRESS, 'USDC_ADDRESS') ?? BASE_USDC_ADDRESS,
    confirmations: positive(env.CONFIRMATIONS, 3, 'CONFIRMATIONS'),
    // 0: this process runs no watcher (payments then move on reports only, or in another process).
    chainPollMs: integer(env.CHAIN_POLL_MS, 2000, 'CHAIN_POLL_MS'),
    paymentExpiryHours: positive(env.PAYMENT_EXPIRY_HOURS, 168, 'PAYMENT_EXPIRY_HOURS'),
    forwarderFactoryAddress: factoryAddress(env.FORWARDER_FACTORY_ADDRESS),
    chainRpcTimeoutMs: positive(env.CHAIN_RPC_TIMEOUT_MS, 5000, 'CHAIN_RPC_TIMEOUT_MS'),
    publicRpcUrl: publicRpcUrl(env.PUBLIC_RPC_URL),
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === '1',
    webhookTimeoutMs: positive(env.WEBHOOK_TIMEOUT_MS, 10_000, 'WEBHOOK_TIMEOUT_MS'),
    log: (message) => process.stderr.write(`${new Date().toISOString()} ${message}\n`),
  };
}
