import type { Clock } from '../actors/kernel/clock.ts';

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
  actorCapacity: number;
  /** Requests per minute from one address (all routes but documents and /health). */
  rateLimitPerMinute: number;
  /** Sign-ups per hour from one address. */
  signUpLimitPerHour: number;
  /** socket.io connections one agent may hold at once. */
  socketsPerAgent: number;
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
        throw new Error(`${name} takes origins like https://app.example, not "${entry}"`);
      return url.origin;
    });
}

function integer(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${name} must be a whole number, not "${value}"`);
  return n;
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
    throw new Error(`HTTP_ENGINE must be uws, node or auto, not "${engine}"`);
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
    actorCapacity: integer(env.ACTOR_CAPACITY, 10_000, 'ACTOR_CAPACITY'),
    rateLimitPerMinute: integer(env.RATE_LIMIT_PER_MINUTE, 1200, 'RATE_LIMIT_PER_MINUTE'),
    signUpLimitPerHour: integer(env.SIGNUP_LIMIT_PER_HOUR, 30, 'SIGNUP_LIMIT_PER_HOUR'),
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
    log: (message) => process.stderr.write(`${new Date().toISOString()} ${message}\n`),
  };
}
