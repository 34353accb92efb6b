import type { BlockList } from 'node:net';
import type { Clock } from '../actors/kernel/clock.ts';
import type { ServiceConfig } from '../actors/kernel/services.ts';
import {
  EnvReader,
  StartRefusal,
  type CapabilityConfig,
  type SettingRow,
} from '../actors/kernel/settings.ts';
import { CAPABILITIES } from '../actors/capabilities.ts';
import { trustedProxies } from './http/client-address.ts';

/**
 * Everything the service reads from its environment (README.md, "Configuration"): the doors' and
 * the kernel's settings here, and each capability's own (CapabilityConfig, which each declares
 * with its settings: actors/<capability>/settings.ts).
 */
export interface Config extends CapabilityConfig {
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
  /** The SMTP door (email-only interface, replies): its address. */
  smtpHost: string;
  /** 0 picks a free port (shown in /health as smtp_port); null: no SMTP door in this process. */
  smtpPort: number | null;
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

/** The doors' and the kernel's variables, in the order of README.md's table. */
export const SERVICE_SETTINGS: readonly SettingRow[] = [
  {
    variables: ['HOST', 'PORT'],
    default: '`127.0.0.1` / `8080`',
    meaning: 'where to listen (`PORT=0` picks a free port)',
  },
  {
    variables: ['DATA_DIR'],
    default: '`./data`',
    meaning: 'the embedded database (`pglite/`) and file blobs (`blobs/`)',
  },
  {
    variables: ['DATABASE_URL'],
    default: 'unset',
    meaning: 'use this PostgreSQL (15+) instead of PGlite',
  },
  {
    variables: ['BASE_URL'],
    default: '`http://HOST:PORT`',
    meaning: 'public address used in links and documents',
  },
  {
    variables: ['HTTP_ENGINE'],
    default: '`auto`',
    meaning:
      '`uws` (uWebSockets.js), `node` (node:http); `auto` uses uWS where its binary loads (Node 20)',
  },
  {
    variables: ['OPERATOR_NAME'],
    default: '`service`',
    meaning: "the operator agent's name; no other agent may contain it in its name",
  },
  {
    variables: ['TERMS_URL', 'PRIVACY_URL'],
    default: '`BASE_URL/terms`, `BASE_URL/privacy`',
    meaning: 'linked from every document',
  },
  {
    variables: ['SMTP_HOST', 'SMTP_PORT'],
    default: '`127.0.0.1` / `2525`',
    meaning:
      'the SMTP door (email interface, replies); `0` picks a port (`/health` `smtp_port`), `off`: none',
  },
  {
    variables: ['RATE_LIMIT_PER_MINUTE'],
    default: '`1200`',
    meaning:
      'requests one caller address may make a minute (documents and `/health` aside; 0: no limit)',
  },
  {
    variables: ['SIGNUP_LIMIT_PER_HOUR'],
    default: '`30`',
    meaning:
      "sign-ups one caller address may make an hour, by HTTP, MCP or mail (the SMTP client's address) together (0: no limit); both limits hold across processes",
  },
  {
    variables: ['TRUSTED_PROXIES'],
    default: 'unset',
    meaning:
      "proxies' addresses or CIDRs (comma list): from them the caller is the right-most `X-Forwarded-For` entry not listed",
  },
  {
    variables: ['SOCKETS_PER_AGENT'],
    default: '`20`',
    meaning: 'socket.io connections one agent may hold at once',
  },
  {
    variables: ['SHUTDOWN_DRAIN_MS'],
    default: '`0`',
    meaning:
      'after SIGTERM, how long `/health` answers 503 `draining` while requests are still served (set it behind a proxy)',
  },
  {
    variables: ['SHUTDOWN_TIMEOUT_MS'],
    default: '`10000`',
    meaning: 'then, how long requests in flight may take to finish before they are aborted',
  },
  {
    variables: ['ACTOR_CAPACITY'],
    default: '`10000`',
    meaning: 'live actors of each kind kept in memory',
  },
  {
    variables: ['MCP_ALLOWED_ORIGINS'],
    default: 'unset',
    meaning:
      "origins `/mcp` admits beyond BASE_URL's (on loopback, any loopback); comma list, `*`: any",
  },
  {
    variables: ['JOB_LEASE_SECONDS'],
    default: '`60`',
    meaning:
      "how long a scheduled job's run is held without a renewal (renewed every third); a run whose process died is run again elsewhere within it",
  },
];

/** JOB_SCHEDULE_<NAME>: NAME is a job's name upper-cased, `_` for `.` (README.md's rows). */
export const JOB_SCHEDULE_PREFIX = 'JOB_SCHEDULE_';

export function configFromEnv(source: NodeJS.ProcessEnv = process.env): Config {
  const env = new EnvReader(source);
  const engine = env.raw('HTTP_ENGINE') ?? 'auto';
  if (engine !== 'uws' && engine !== 'node' && engine !== 'auto') {
    throw new StartRefusal(`HTTP_ENGINE must be uws, node or auto, not "${engine}"`);
  }
  // Each capability reads its own variables (actors/<capability>/settings.ts).
  const capabilities = Object.assign(
    {},
    ...CAPABILITIES.map((capability) => capability.settings?.read(env) ?? {}),
  ) as CapabilityConfig;
  return {
    host: env.raw('HOST') ?? '127.0.0.1',
    port: env.integer('PORT', 8080),
    dataDir: env.raw('DATA_DIR') ?? './data',
    databaseUrl: env.raw('DATABASE_URL'),
    baseUrl: env.raw('BASE_URL')?.replace(/\/+$/, '') || undefined,
    httpEngine: engine,
    operatorName: env.raw('OPERATOR_NAME') ?? 'service',
    termsUrl: env.raw('TERMS_URL'),
    privacyUrl: env.raw('PRIVACY_URL'),
    smtpHost: env.raw('SMTP_HOST') ?? '127.0.0.1',
    smtpPort: env.raw('SMTP_PORT') === 'off' ? null : env.integer('SMTP_PORT', 2525),
    actorCapacity: env.integer('ACTOR_CAPACITY', 10_000),
    rateLimitPerMinute: env.integer('RATE_LIMIT_PER_MINUTE', 1200),
    signUpLimitPerHour: env.integer('SIGNUP_LIMIT_PER_HOUR', 30),
    trustedProxies: trustedProxies(env.raw('TRUSTED_PROXIES')),
    shutdownDrainMs: env.integer('SHUTDOWN_DRAIN_MS', 0),
    shutdownTimeoutMs: env.integer('SHUTDOWN_TIMEOUT_MS', 10_000),
    socketsPerAgent: env.integer('SOCKETS_PER_AGENT', 20),
    mcpAllowedOrigins: origins(env.raw('MCP_ALLOWED_ORIGINS'), 'MCP_ALLOWED_ORIGINS'),
    jobSchedules: env.prefixed(JOB_SCHEDULE_PREFIX),
    jobLeaseSeconds: env.positive('JOB_LEASE_SECONDS', 60),
    ...capabilities,
    log: (message) => process.stderr.write(`${new Date().toISOString()} ${message}\n`),
  };
}

/**
 * What each capability tells its Services, from the configuration and what only the running
 * service knows (its base URL).
 */
export function capabilityServiceConfig(config: Config, running: { baseUrl: string }) {
  return Object.assign(
    {},
    ...CAPABILITIES.map((capability) => capability.settings?.services?.(config, running) ?? {}),
  ) as Partial<ServiceConfig>;
}
