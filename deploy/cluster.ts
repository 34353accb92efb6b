/**
 * A whole deployment on this machine, as deploy/ describes it: PostgreSQL 15, an S3 store,
 * N service processes and haproxy in front. `npm run deploy:local` (deploy/up.ts) runs one
 * until Ctrl-C; the kill-one-process test (test/scale/) runs one under load.
 *
 * - PostgreSQL: a fresh database in the server `databaseUrl` names (dropped at stop), or a
 *   throw-away PostgreSQL 15 from /usr/lib/postgresql/15/bin in a temporary directory.
 * - S3: s3rver (MinIO cannot be installed here), in this process, with its bucket made.
 * - Service processes: `node build/server/main.js` as `npm start` runs it (built first, once:
 *   deploy/build.mjs), each on a port of its own kept across restarts, so haproxy finds a
 *   restarted process where it was.
 * - haproxy: the settings every haproxy config of ours uses (docs/deployment.md), generated here,
 *   checked with `haproxy -c`, with a stats page the cluster reads to know what haproxy sees.
 *
 * Every child is stopped by `stop()` on every path, and killed outright if this process exits
 * before that.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { S3rver } from './s3rver.ts';
import { newToken } from '../actors/kernel/tokens.ts';
import { ephemeralPortRange } from '../server/listen-error.ts';

const root = join(import.meta.dirname, '..');
const serviceMain = join(root, 'build/server/main.js');

/** Brings build/ up to date, once per process that starts a cluster. */
let built = false;
function buildOnce(): void {
  if (!built)
    execFileSync(process.execPath, [join(root, 'deploy/build.mjs')], { stdio: 'inherit' });
  built = true;
}
const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';
const HAPROXY = '/usr/sbin/haproxy';
const BUCKET = 'agent-service';
/** s3rver checks no signatures; these are its documented defaults. */
const S3_KEY = 'S3RVER';
/** The most of a child's log kept in memory (its tail). */
const LOG_TAIL_BYTES = 256 * 1024;

export interface ClusterOptions {
  /** Service processes behind the proxy (default 3). */
  processes?: number;
  /** A PostgreSQL server (`postgres://user@host:port/db`): a fresh database is made in it. */
  databaseUrl?: string;
  /** Prefix of the database made in `databaseUrl` (default `cluster_`). */
  databasePrefix?: string;
  /** `SHUTDOWN_DRAIN_MS` of every process (default 2000: two haproxy checks at `inter 1s`). */
  drainMs?: number;
  /** More environment for every service process (on top of the cluster's). */
  env?: Record<string, string>;
  /** Where the cluster says what it does and what its children log (default: nowhere). */
  log?: (line: string) => void;
  /** Forward the service processes' own log lines to `log` (default false). */
  forwardServiceLogs?: boolean;
}

/** One exit of a service process. */
export interface ProcessExit {
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The signal the cluster sent it through `kill`, if it did. */
  sentSignal: NodeJS.Signals | null;
}

export interface ClusterProcess {
  /** haproxy's name for it (`p1`, `p2`, ...), also its stickiness cookie. */
  readonly name: string;
  /** The pid of the running process (the last one started). */
  readonly pid: number;
  readonly port: number;
  /** Its own address, not through the proxy. */
  readonly url: string;
  /** Whether the last process started still runs. */
  readonly running: boolean;
  /** Every exit so far, in order. */
  readonly exits: readonly ProcessExit[];
  /** Sends `signal` to the running process. */
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the running process has exited. */
  exited(): Promise<ProcessExit>;
  /** Starts it again on the same port (after it exited); resolves once it listens. */
  restart(): Promise<void>;
  /** Resolves once haproxy marks it `UP` (passed `rise` checks). */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Resolves once haproxy marks it `DOWN` (or `MAINT`/`NOLB`: taking no new requests). */
  waitOut(timeoutMs?: number): Promise<void>;
  /** The tail of what the process (every start of it) wrote to stderr. */
  stderr(): string;
}

export interface Cluster {
  /** Where clients connect: haproxy. */
  readonly proxyUrl: string;
  /** The operator agent's token (`OPERATOR_TOKEN` of every process). */
  readonly operatorToken: string;
  /** The database every process uses. */
  readonly databaseUrl: string;
  readonly s3Url: string;
  readonly processes: readonly ClusterProcess[];
  /** The generated haproxy configuration (its text). */
  readonly haproxyConfig: string;
  /** Resolves once haproxy marks every process `UP`. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** What haproxy says of each server, by name (`UP`, `DOWN`, `MAINT`, `UP 1/2`, ...). */
  proxyStatus(): Promise<Map<string, string>>;
  /** Stops every process, haproxy, s3rver and PostgreSQL, and removes what it made. */
  stop(): Promise<void>;
}

/** Where freePort's picks start: above the ports services are commonly given by hand. */
const OWN_PORTS_FROM = 20_000;
/** Every port freePort gave in this process. */
const handedOut = new Set<number>();

/**
 * A port nobody listens on now, outside the system's ephemeral range. Each process keeps its
 * port across restarts, and while it is down the system may lend a port of that range to any
 * socket of the machine (an outgoing connection, a bind to port 0): the restart then could not
 * listen (seen as `cannot listen on 127.0.0.1:45695` right after a SIGTERM). Outside the range,
 * the system gives the port to no one unasked.
 */
export async function freePort(): Promise<number> {
  const [low, high] = ephemeralPortRange() ?? [49152, 65535];
  // Below the range when there is room there (Linux: 20000-32767), else above it.
  const [from, to] = low - OWN_PORTS_FROM >= 1000 ? [OWN_PORTS_FROM, low - 1] : [high + 1, 65535];
  for (let tries = 0; tries < 100; tries++) {
    const port = randomInt(from, to + 1);
    // A port handed out is not listened on yet when the next is asked for (processes start
    // in turn): never hand it out twice.
    if (handedOut.has(port)) continue;
    if (await listensOn(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${from}-${to} after 100 tries`);
}

/** Whether a listen on 127.0.0.1:`port` succeeds now (it is closed again at once). */
function listensOn(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Keeps the last `LOG_TAIL_BYTES` of a stream, reading it to the end (never a full pipe). */
function tailOf(
  stream: NodeJS.ReadableStream | null,
  into: { text: string },
  onLine?: (line: string) => void,
): void {
  let partial = '';
  stream?.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    into.text = (into.text + text).slice(-LOG_TAIL_BYTES);
    if (!onLine) return;
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
}

/** Resolves when `predicate` holds of the text seen so far on `stream`; rejects on exit. */
function waitForOutput(
  child: ChildProcess,
  stream: NodeJS.ReadableStream | null,
  predicate: (text: string) => boolean,
  what: string,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => finish(new Error(`${what}: no sign after ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-LOG_TAIL_BYTES);
      if (predicate(seen)) finish();
    };
    const onExit = (code: number | null, signal: string | null) =>
      finish(new Error(`${what}: exited (${code ?? signal}) first: ${seen.slice(-4000)}`));
    const finish = (error?: Error) => {
      clearTimeout(timer);
      stream?.off('data', onData);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    };
    stream?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Children still running, killed outright if this process exits without stopping them. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Ends a child: `signal`, then SIGKILL if it is still there after `graceMs`. */
async function end(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const killer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(killer);
}

interface Database {
  url: string;
  stop(): Promise<void>;
}

/** A fresh database in the PostgreSQL server `serverUrl` names, dropped by `stop`. */
async function databaseIn(serverUrl: string, prefix: string): Promise<Database> {
  const name = `${prefix}${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    stop: async () => {
      const dropper = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await dropper.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await dropper.end();
      }
    },
  };
}

/**
 * A throw-away PostgreSQL 15 in `directory` on a free port: initdb, then the server. Run as the
 * `postgres` user when this process is root (PostgreSQL refuses to run as root): spawned with
 * that user's uid, so the pid held is the server's own and a signal sent to it reaches it.
 */
async function throwAwayPostgres(
  directory: string,
  log: (line: string) => void,
): Promise<Database> {
  const dataDir = join(directory, 'pgdata');
  mkdirSync(dataDir);
  let ids: { uid: number; gid: number } | Record<string, never> = {};
  if (process.getuid?.() === 0) {
    const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString().trim());
    if (!Number.isInteger(uid) || uid === 0)
      throw new Error('no `postgres` user to run PostgreSQL as');
    chownSync(directory, uid, gid);
    chownSync(dataDir, uid, gid);
    ids = { uid, gid };
  }
  const initdb = spawnSync(
    join(POSTGRES_BIN, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'],
    { ...ids, encoding: 'utf8' },
  );
  if (initdb.status !== 0) throw new Error(`initdb failed: ${initdb.stderr}${initdb.stdout}`);
  const port = await freePort();
  const server = track(
    spawn(
      join(POSTGRES_BIN, 'postgres'),
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-k',
        directory,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'max_connections=300',
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
      ],
      { ...ids, stdio: ['ignore', 'ignore', 'pipe'] },
    ),
  );
  const logText = { text: '' };
  const ready = waitForOutput(
    server,
    server.stderr,
    (text) => text.includes('database system is ready to accept connections'),
    'PostgreSQL',
    60_000,
  );
  tailOf(server.stderr, logText);
  try {
    await ready;
  } catch (error) {
    await end(server, 'SIGKILL', 1000);
    throw error;
  }
  log(`PostgreSQL 15 on 127.0.0.1:${port} (pid ${server.pid}, ${dataDir})`);
  const serverUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const database = await databaseIn(serverUrl, 'agent_service_');
  return {
    url: database.url,
    // Fast shutdown (SIGINT): disconnect clients and stop; the data goes with the directory.
    stop: () => end(server, 'SIGINT', 10_000),
  };
}

/**
 * The frontend rules of deploy/haproxy.cfg that answer, at the proxy, the requests the uWS engine
 * never answers (bad header names, unknown methods, HTTP/1.0, no Host): one text for both configs.
 */
export function unansweredRequestRules(): string[] {
  const text = readFileSync(new URL('./haproxy.cfg', import.meta.url), 'utf8');
  const begin = text.indexOf('  # --- requests uWebSockets.js never answers (begin');
  const end = text.indexOf('  # --- requests uWebSockets.js never answers (end) ---');
  if (begin < 0 || end < begin)
    throw new Error('deploy/haproxy.cfg lost its unanswered-request block');
  return text.slice(begin, end).trimEnd().split('\n');
}

/** The haproxy configuration of the cluster: the settings in docs/deployment.md. */
export function haproxyConfigFor(
  proxyPort: number,
  statsPort: number,
  servers: { name: string; port: number }[],
): string {
  return [
    'global',
    // Each connection takes two descriptors (client and server side) of the 20,000 allowed here.
    '  maxconn 9000',
    '',
    'defaults',
    '  mode http',
    '  option forwardfor',
    '  timeout connect 5s',
    '  timeout client 75s',
    '  timeout server 75s',
    '  timeout tunnel 1h',
    '  timeout http-request 10s',
    '',
    'frontend public',
    `  bind 127.0.0.1:${proxyPort}`,
    ...unansweredRequestRules(),
    '  default_backend services',
    '',
    'backend services',
    '  balance roundrobin',
    // socket.io's long-polling transport needs every request of a session on one process.
    '  cookie AGENT_SERVICE_SERVER insert indirect nocache httponly',
    // HTTP/1.1 with a Host: uWebSockets.js (20.30) never answers an HTTP/1.0 request, which is
    // what `option httpchk GET /health` alone sends, so every check would time out.
    '  option httpchk',
    '  http-check send meth GET uri /health ver HTTP/1.1 hdr Host localhost',
    '  http-check expect status 200',
    '  default-server inter 1s fall 1 rise 2',
    '  option redispatch',
    '  retry-on conn-failure',
    '  retries 2',
    ...servers.map(
      (server) => `  server ${server.name} 127.0.0.1:${server.port} check cookie ${server.name}`,
    ),
    '',
    'listen stats',
    `  bind 127.0.0.1:${statsPort}`,
    '  stats enable',
    '  stats uri /stats',
    '',
  ].join('\n');
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const count = options.processes ?? 3;
  if (!Number.isInteger(count) || count < 1) throw new Error('processes must be 1 or more');
  const log = options.log ?? (() => {});
  const directory = mkdtempSync(join(tmpdir(), 'agent-service-cluster-'));
  /** What stop() undoes, last started first. */
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    const errors: unknown[] = [];
    for (const stopOne of stops.splice(0).reverse()) {
      try {
        await stopOne();
      } catch (error) {
        errors.push(error);
      }
    }
    rmSync(directory, { recursive: true, force: true });
    if (errors.length > 0) throw new AggregateError(errors, 'the cluster did not stop cleanly');
  };

  try {
    const database = options.databaseUrl
      ? await databaseIn(options.databaseUrl, options.databasePrefix ?? 'cluster_')
      : await throwAwayPostgres(directory, log);
    stops.push(database.stop);
    log(`database ${new URL(database.url).pathname.slice(1)}`);

    const s3Directory = join(directory, 's3');
    mkdirSync(s3Directory);
    const s3rver = new S3rver({
      address: '127.0.0.1',
      port: await freePort(),
      silent: true,
      directory: s3Directory,
      configureBuckets: [{ name: BUCKET }],
    });
    const { port: s3Port } = await s3rver.run();
    stops.push(() => s3rver.close());
    const s3Url = `http://${S3_KEY}:${S3_KEY}@127.0.0.1:${s3Port}/${BUCKET}`;
    log(`s3rver on 127.0.0.1:${s3Port}, bucket ${BUCKET}`);

    const proxyPort = await freePort();
    const statsPort = await freePort();
    const proxyUrl = `http://127.0.0.1:${proxyPort}`;
    const operatorToken = newToken();
    const env: Record<string, string> = {
      DATABASE_URL: database.url,
      S3_URL: s3Url,
      BASE_URL: proxyUrl,
      OPERATOR_TOKEN: operatorToken,
      RECEIPT_KEY_SECRET: randomBytes(32).toString('base64url'),
      RATE_LIMIT_PER_MINUTE: '0',
      SIGNUP_LIMIT_PER_HOUR: '0',
      SHUTDOWN_DRAIN_MS: String(options.drainMs ?? 2000),
      TRUSTED_PROXIES: '127.0.0.1',
      HOST: '127.0.0.1',
      SMTP_PORT: 'off',
      ...options.env,
    };

    /** Set when haproxy has exited: what it said last. */
    let haproxyEnded: string | undefined;
    let statsCache: Promise<Map<string, string>> | undefined;
    const proxyStatus = async (): Promise<Map<string, string>> => {
      // One read of the stats page at a time, shared by whoever asks meanwhile.
      statsCache ??= (async () => {
        try {
          const csv = await (await fetch(`http://127.0.0.1:${statsPort}/stats;csv`)).text();
          const status = new Map<string, string>();
          for (const line of csv.split('\n')) {
            const fields = line.split(',');
            // pxname, svname, ... status is the 18th field.
            if (
              fields[0] === 'services' &&
              fields[1] &&
              !['FRONTEND', 'BACKEND'].includes(fields[1])
            )
              status.set(fields[1], fields[17] ?? '');
          }
          return status;
        } finally {
          statsCache = undefined;
        }
      })();
      return statsCache;
    };
    const waitStatus = async (
      name: string,
      wanted: (status: string) => boolean,
      what: string,
      timeoutMs: number,
    ) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Until haproxy listens, its stats page answers nothing: no status yet.
        const status = (await proxyStatus().catch(() => new Map<string, string>())).get(name) ?? '';
        if (wanted(status)) return;
        if (haproxyEnded) throw new Error(`haproxy ${haproxyEnded}`);
        if (Date.now() > deadline)
          throw new Error(`haproxy did not see ${name} ${what} in ${timeoutMs} ms (${status})`);
        // haproxy checks every second; its stats page is the only way to hear what it decided.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };

    const processes: ClusterProcess[] = [];
    for (let index = 1; index <= count; index++) {
      const name = `p${index}`;
      const port = await freePort();
      const dataDir = join(directory, name);
      mkdirSync(dataDir);
      processes.push(
        serviceProcess(
          name,
          port,
          { ...env, PORT: String(port), DATA_DIR: dataDir },
          {
            log,
            forward: options.forwardServiceLogs ?? false,
            waitStatus,
          },
        ),
      );
    }
    stops.push(async () => {
      await Promise.all(processes.map((p) => (p as ServiceProcessHandle).stop()));
    });
    // The first process runs the migrations; the others start once it has.
    await (processes[0] as ServiceProcessHandle).start();
    await Promise.all(processes.slice(1).map((p) => (p as ServiceProcessHandle).start()));

    const haproxyConfig = haproxyConfigFor(proxyPort, statsPort, processes);
    const configFile = join(directory, 'haproxy.cfg');
    writeFileSync(configFile, haproxyConfig);
    const check = spawnSync(HAPROXY, ['-c', '-f', configFile], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`haproxy -c refused the config: ${check.stderr}`);
    const haproxy = track(
      spawn(HAPROXY, ['-db', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    const haproxyLog = { text: '' };
    tailOf(haproxy.stdout, haproxyLog);
    tailOf(haproxy.stderr, haproxyLog, (line) => log(`haproxy: ${line}`));
    haproxy.once('exit', (code, signal) => {
      haproxyEnded = `exited (${code ?? signal}): ${haproxyLog.text.slice(-2000)}`;
    });
    stops.push(() => end(haproxy, 'SIGTERM', 5000));
    log(
      `haproxy on ${proxyUrl} (pid ${haproxy.pid}), stats on http://127.0.0.1:${statsPort}/stats`,
    );

    const waitHealthy = async (timeoutMs = 30_000) => {
      await Promise.all(processes.map((p) => p.waitHealthy(timeoutMs)));
    };
    await waitHealthy();

    let stopped: Promise<void> | undefined;
    return {
      proxyUrl,
      operatorToken,
      databaseUrl: database.url,
      s3Url,
      processes,
      haproxyConfig,
      waitHealthy,
      proxyStatus,
      stop: () => (stopped ??= stopAll()),
    };
  } catch (error) {
    await stopAll().catch((stopError: unknown) => log(`while stopping: ${String(stopError)}`));
    throw error;
  }
}

interface ServiceProcessHandle extends ClusterProcess {
  /** Starts it the first time; resolves once it listens. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * One service process of the cluster, started by `start()`; `restart()` runs
 * it again on the same port with the same environment.
 */
function serviceProcess(
  name: string,
  port: number,
  env: Record<string, string>,
  context: {
    log: (line: string) => void;
    forward: boolean;
    waitStatus: (
      name: string,
      wanted: (status: string) => boolean,
      what: string,
      timeoutMs: number,
    ) => Promise<void>;
  },
): ServiceProcessHandle {
  const logText = { text: '' };
  const exits: ProcessExit[] = [];
  let child: ChildProcess | undefined;
  let exited: Promise<ProcessExit> = Promise.resolve({
    pid: 0,
    code: null,
    signal: null,
    sentSignal: null,
  });
  let sentSignal: NodeJS.Signals | null = null;
  let stopping = false;

  const launch = async () => {
    buildOnce();
    if (child && child.exitCode === null && child.signalCode === null)
      throw new Error(`${name} still runs (pid ${child.pid})`);
    sentSignal = null;
    const started = track(
      spawn(process.execPath, ['--max-semi-space-size=8', serviceMain], {
        cwd: root,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
    );
    child = started;
    exited = new Promise((resolve) =>
      started.once('exit', (code, signal) => {
        const exit = { pid: started.pid ?? 0, code, signal, sentSignal };
        exits.push(exit);
        if (!stopping) context.log(`${name} (pid ${exit.pid}) exited: ${code ?? signal}`);
        resolve(exit);
      }),
    );
    const listening = waitForOutput(
      started,
      started.stderr,
      (text) => text.includes('listening on'),
      `${name} on port ${port}`,
      120_000,
    );
    tailOf(
      started.stderr,
      logText,
      context.forward ? (line) => context.log(`${name}: ${line}`) : undefined,
    );
    await listening;
    context.log(`${name} listening on 127.0.0.1:${port} (pid ${started.pid})`);
  };

  let first: Promise<void> | undefined;
  return {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    get pid() {
      return child?.pid ?? 0;
    },
    get running() {
      return !!child && child.exitCode === null && child.signalCode === null;
    },
    exits,
    start: () => (first ??= launch()),
    kill(signal) {
      sentSignal = signal;
      child?.kill(signal);
    },
    exited: () => exited,
    async restart() {
      await exited;
      await launch();
    },
    // haproxy counts a server UP before its first check: the process's own /health says first.
    waitHealthy: async (timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
        if (health?.status === 200) break;
        if (Date.now() > deadline)
          throw new Error(`${name}'s /health is not 200 in ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await context.waitStatus(name, (status) => status === 'UP', 'UP', deadline - Date.now());
    },
    waitOut: (timeoutMs = 30_000) =>
      context.waitStatus(
        name,
        (status) => /^(DOWN|MAINT|NOLB)/.test(status),
        'out of rotation',
        timeoutMs,
      ),
    stderr: () => logText.text,
    async stop() {
      stopping = true;
      if (child) await end(child, 'SIGTERM', 20_000);
    },
  };
}
