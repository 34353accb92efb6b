/**
 * `npm run bench`: whoami throughput, write-to-push latency, file PUT/GET, the write path
 * (commands per second through the registry), idle memory, agents' SQL over the index, the
 * store (GET /store under load, a listing reaching 1,000 watchers) and message fan-out, each
 * beside a baseline measured in the same run on the same machine. It prints figures and never
 * fails: a run that breaks or overruns prints what it has and exits 0.
 *
 * BENCH_ONLY=index-sql (a comma-separated list of push, throughput, signatures, files, commands,
 * idle-rss, index-sql, store, chat, reputation, sql-timeouts, payments, email, webhooks,
 * hostile-neighbours, scale-out) runs only those sections; BENCH_EXPLAIN=1 prints the index
 * queries' plans; BENCH_STORE_LISTINGS makes the store's fixture smaller for a try-out.
 * signatures: GET /whoami signed (RFC 9421, Ed25519) and with a token on one service, beside
 * raw uWS, and what verifying one signature costs (bench/signatures.ts).
 * The write-to-push section runs on PGlite and, with a database URL, on PostgreSQL, and
 * prints each write's round trips to the database (Driver.roundTrips).
 */
import { execSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { closeTestResources } from '../test/helpers/resources.ts';
import { startRawSocketIo } from './baselines.ts';
import { CHAT_MEMBERS, measureChat } from './chat.ts';
import { closeAll, connectMany, type PushClient } from './clients.ts';
import {
  measureCommands,
  type CommandBenchOptions,
  type CommandFigure,
  type DriverKind,
} from './commands.ts';
import { crowdSkipReason, openCrowd, openFloor, type Crowd, type Floor } from './fan-out.ts';
import { measureEmail } from './email.ts';
import { measureFiles } from './files.ts';
import { idleRssAvailable, measureIdleRss } from './idle-rss-section.ts';
import {
  INDEXED_FILES,
  indexSqlSkipReason,
  measureIndexSql,
  type IndexSqlFigure,
  type IndexSqlFixture,
  type IndexSqlOptions,
} from './index-sql.ts';
import { measurePayments, paymentsSkipReason } from './payments.ts';
import { emitPoster, feedbackPoster, timeLongPolls, timeSocketPushes } from './push-latency.ts';
import { emptyResults, report } from './report.ts';
import {
  measureReputation,
  REPUTATION_DEALS,
  reputationSkipReason,
  type ReputationSink,
} from './reputation.ts';
import { benchDatabaseUrl } from './scratch-database.ts';
import { emptyScaleOut, measureScaleOut, scaleOutLines, scaleOutSkipReason } from './scale-out.ts';
import { measureStore, STORE_LISTINGS, type StoreSink } from './store.ts';
import { measureSignatures } from './signatures.ts';
import { measureSqlTimeouts, sqlTimeoutsTable, type SqlTimeoutsFigure } from './sql-timeouts.ts';
import { measureRawUws, measureWhoami } from './whoami.ts';
import { measureWebhooks, WEBHOOK_CHANGES, WEBHOOK_ENDPOINTS } from './webhooks.ts';
import { hostileNeighboursTable, runHostileNeighbours } from './hostile-neighbours.ts';

/**
 * Past this the bench prints what it has and exits (BENCH_LIMIT_S shortens it for a try-out).
 * With PostgreSQL too, a whole run takes about 15 minutes on 2 cores (the store's 100,000
 * listings and the index's 100,000 files are most of it).
 */
const OVERALL_LIMIT_MS = (Number(process.env.BENCH_LIMIT_S) || 1500) * 1000;
/** BENCH_CLIENTS lowers the socket count on a machine that cannot hold 1,000 (2 fds each). */
const CLIENTS = Math.max(1, Math.floor(Number(process.env.BENCH_CLIENTS ?? 1000)) || 1000);
const SET_UP_CONCURRENCY = 20;
const SOCKET_WRITES = 500;
const LONG_POLL_WRITES = 200;
/** The write benchmark: BENCH_COMMANDS measured commands per case, 10 in flight, 1,000 actors. */
const COMMANDS: CommandBenchOptions = {
  commands: Math.max(100, Math.floor(Number(process.env.BENCH_COMMANDS ?? 2000)) || 2000),
  concurrency: 10,
  actors: 1000,
  databaseUrl: benchDatabaseUrl(),
};

/** Agents' SQL over the index: at most this many measured rounds per query and driver. */
const INDEX_SQL: IndexSqlOptions = {
  databaseUrl: benchDatabaseUrl(),
  rounds: 300,
  explain: process.env.BENCH_EXPLAIN === '1',
};

const SECTIONS = [
  'push',
  'throughput',
  'files',
  'commands',
  'idle-rss',
  'index-sql',
  'store',
  'chat',
  'reputation',
  'sql-timeouts',
  'payments',
  'email',
  'webhooks',
  'hostile-neighbours',
  'scale-out',
  'signatures',
] as const;
type SectionName = (typeof SECTIONS)[number];
const only = new Set(
  (process.env.BENCH_ONLY ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean),
);
const wanted = (name: SectionName) => only.size === 0 || only.has(name);

const results = emptyResults();

const stop = new AbortController();
const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);
const since = (started: number) => `${((performance.now() - started) / 1000).toFixed(1)} s`;

/** The servers' own error log, kept for the report (tests silence it). */
const MAX_SERVER_LINES = 20;
function serverLog(message: string): void {
  if (results.serverLog.length < MAX_SERVER_LINES) results.serverLog.push(message);
}

function fdLimit(): string {
  try {
    return execSync('ulimit -n', { shell: '/bin/sh', encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

async function section(name: string, run: () => Promise<void>): Promise<void> {
  const started = performance.now();
  log(`${name}...`);
  try {
    await run();
    log(`${name}: done in ${since(started)}`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    results.notes.push(`${name} failed: ${message}`);
    log(`${name} FAILED: ${message}`);
  }
}

async function throughput(): Promise<void> {
  await section('raw uWS hello world', async () => {
    results.rawUws = await measureRawUws(stop.signal);
  });
  await section('GET /whoami on uWS', async () => {
    results.whoamiUws = await measureWhoami('uws', serverLog, stop.signal);
  });
  await section('GET /whoami on node:http', async () => {
    results.whoamiNode = await measureWhoami('node', serverLog, stop.signal);
  });
}

/**
 * GET /whoami with a Bearer token and signed with no token (RFC 9421, Ed25519) on one service,
 * beside the raw uWS baseline of this run (the throughput section's, else measured here), and
 * what verifying one signature costs (signatures.ts).
 */
async function signatures(): Promise<void> {
  await section('GET /whoami signed and with a token, and the cost of a signature', async () => {
    results.signatures = await measureSignatures(results.rawUws, stop.signal, log, serverLog);
  });
}

async function files(): Promise<void> {
  await section('file PUT/GET, 1 MiB and 100 MiB, with raw baselines', async () => {
    results.files = await measureFiles(stop.signal, log, serverLog);
  });
}

/**
 * The service's write-to-push latency on one driver: CLIENTS agents connected, one of them
 * writing (POST /feedback) and timed until its own socket has the change; on PGlite the
 * long-poll is timed after it, under the same load. Also counts the write's round trips to
 * the database (the driver's own count, over the timed writes).
 */
async function servicePushesOn(kind: DriverKind): Promise<void> {
  const crowd = await openCrowd(kind, CLIENTS, benchDatabaseUrl(), log, serverLog);
  try {
    const [sender] = crowd.clients;
    const [token] = crowd.tokens;
    if (!sender || !token) throw new Error('no clients connected');
    const samples = kind === 'pglite' ? results.servicePush : results.servicePushPostgres;
    if (kind === 'pglite') results.serviceClients = crowd.clients.length;
    else results.servicePostgresClients = crowd.clients.length;
    const { driver } = crowd.server.services;
    const before = driver.roundTrips();
    await timeSocketPushes(sender, feedbackPoster(crowd.server, token), SOCKET_WRITES, samples);
    const writes = samples.post.length;
    if (writes > 0) {
      results.roundTrips.push({
        driver: kind,
        write: 'POST /feedback (its write and the push)',
        perWrite: (driver.roundTrips() - before) / writes,
      });
    }
    if (kind !== 'pglite') return;
    // The sockets stay connected: the long-poll is measured under the same load.
    const waiter = await crowd.server.signUp('bench long-poll');
    await timeLongPolls(crowd.server, waiter.api_token, LONG_POLL_WRITES, results.longPoll);
  } finally {
    await crowd.close();
  }
}

async function servicePushes(): Promise<void> {
  const pgliteSkipped = crowdSkipReason('pglite', benchDatabaseUrl());
  if (pgliteSkipped) {
    results.notes.push(`write-to-push on PGlite: skipped (${pgliteSkipped})`);
  } else {
    await section(`write-to-push, service on PGlite, ${CLIENTS} sockets`, () =>
      servicePushesOn('pglite'),
    );
  }
  const skipped = crowdSkipReason('postgres', benchDatabaseUrl());
  if (skipped) {
    results.servicePushPostgresSkipped = skipped;
    log(`write-to-push on PostgreSQL: skipped (${skipped})`);
    return;
  }
  await section(`write-to-push, service on PostgreSQL, ${CLIENTS} sockets`, () =>
    servicePushesOn('postgres'),
  );
}

async function baselinePushes(): Promise<void> {
  const baseline = await startRawSocketIo();
  let clients: PushClient[] = [];
  try {
    const tokens = new Array<undefined>(CLIENTS).fill(undefined);
    clients = await connectMany(baseline.baseUrl, tokens, SET_UP_CONCURRENCY, false);
    results.baselineClients = clients.length;
    const [sender] = clients;
    if (!sender?.socket.id) throw new Error('no clients connected');
    const post = emitPoster(baseline.baseUrl, sender.socket.id);
    await timeSocketPushes(sender, post, SOCKET_WRITES, results.baselinePush);
  } finally {
    closeAll(clients);
    await baseline.close();
  }
}

async function writePath(): Promise<void> {
  results.commandShape =
    `${COMMANDS.commands} measured commands per case and path after a warm-up, ${COMMANDS.concurrency} in ` +
    `flight (closed loop), on 1 actor and spread over ${COMMANDS.actors.toLocaleString('en-US')}`;
  const record = (figure: CommandFigure) => {
    results.commands.push(figure);
    const { firstError } = figure.result;
    if (firstError) {
      results.notes.push(
        `${figure.driver} ${figure.command} ${figure.path}, ${figure.actors} actors: ${figure.result.failures} failed, the first with: ${firstError}`,
      );
    }
  };
  await section('commands on PGlite', () =>
    measureCommands('pglite', COMMANDS, stop.signal, record, log),
  );
  if (!COMMANDS.databaseUrl) {
    results.commandsPostgresSkipped = 'neither BENCH_DATABASE_URL nor DATABASE_URL is set';
    log(`commands on PostgreSQL: skipped (${results.commandsPostgresSkipped})`);
    return;
  }
  await section('commands on PostgreSQL', () =>
    measureCommands('postgres', COMMANDS, stop.signal, record, log),
  );
}

async function indexSql(): Promise<void> {
  const sink = {
    figure(figure: IndexSqlFigure) {
      results.indexSql.push(figure);
      if (figure.firstError) {
        results.notes.push(
          `index SQL, ${figure.driver} ${figure.query} ${figure.path}: ${figure.failures} failed, the first with: ${figure.firstError}`,
        );
      }
    },
    fixture: (fixture: IndexSqlFixture) => results.indexSqlFixtures.push(fixture),
    note: (line: string) => results.notes.push(line),
  };
  for (const kind of ['pglite', 'postgres'] as const) {
    const driver = kind === 'pglite' ? 'PGlite' : 'PostgreSQL';
    const name = `index SQL on ${driver}, ${INDEXED_FILES.toLocaleString('en-US')} files`;
    const skipped = indexSqlSkipReason(kind, INDEX_SQL);
    if (skipped) {
      results.indexSqlSkipped.push(`${driver}: skipped, ${skipped}`);
      log(`${name}: skipped (${skipped})`);
      continue;
    }
    await section(name, () => measureIndexSql(kind, INDEX_SQL, stop.signal, sink, log, serverLog));
  }
}

/** Both sections' server, with CLIENTS agents connected: made once per driver, null if it failed. */
async function crowdOn(kind: DriverKind, driver: string): Promise<Crowd | null> {
  const opened: { crowd?: Crowd } = {};
  await section(`${CLIENTS} agents signed up and connected on ${driver}`, async () => {
    opened.crowd = await openCrowd(kind, CLIENTS, benchDatabaseUrl(), log, serverLog);
  });
  return opened.crowd ?? null;
}

/**
 * The store and message fan-out, per driver on one server with CLIENTS agents connected, which
 * both sections use, and one floor (bare socket.io, CLIENTS sockets of its own) that both time
 * their pushes beside, opened when first asked for.
 */
async function storeAndChat(): Promise<void> {
  const sink: StoreSink = {
    fixture: (fixture) => results.storeFixtures.push(fixture),
    page: (figure) => results.storePages.push(figure),
    query: (figure) => results.storeQueries.push(figure),
    watches: (figure) => results.storeWatches.push(figure),
    note: (line) => results.notes.push(line),
  };
  for (const kind of ['pglite', 'postgres'] as const) {
    const driver = kind === 'pglite' ? 'PGlite' : 'PostgreSQL';
    const skipped = crowdSkipReason(kind, benchDatabaseUrl());
    if (skipped) {
      results.fanOutSkipped.push(`${driver}: skipped, ${skipped}`);
      log(`store and chat on ${driver}: skipped (${skipped})`);
      continue;
    }
    if (stop.signal.aborted) return;
    const crowd = await crowdOn(kind, driver);
    if (!crowd) continue;
    const floor: { opening?: Promise<Floor> } = {};
    const floorOf = () => (floor.opening ??= openFloor(CLIENTS, CHAT_MEMBERS));
    try {
      if (wanted('store')) {
        const listings = STORE_LISTINGS.toLocaleString('en-US');
        await section(`store on ${driver}, ${listings} listings`, () =>
          measureStore(crowd, floorOf, sink, stop.signal, log, serverLog),
        );
      }
      if (wanted('chat')) {
        await section(`message fan-out on ${driver}, ${CHAT_MEMBERS} members`, () =>
          measureChat(crowd, floorOf, (figure) => results.chat.push(figure), stop.signal, log),
        );
      }
    } finally {
      await floor.opening?.then((open) => open.close()).catch(() => undefined);
      await crowd.close().catch(() => undefined);
    }
  }
}

/** The reputation record of an agent with REPUTATION_DEALS deals, per driver, beside GET /health. */
async function reputation(): Promise<void> {
  const sink: ReputationSink = {
    figure(figure) {
      results.reputation.push(figure);
      if (figure.firstError) {
        results.notes.push(
          `reputation, ${figure.driver} ${figure.lane}: ${figure.failures} failed, the first with: ${figure.firstError}`,
        );
      }
    },
    fixture: (fixture) => results.reputationFixtures.push(fixture),
    note: (line) => results.notes.push(line),
  };
  for (const kind of ['pglite', 'postgres'] as const) {
    const driver = kind === 'pglite' ? 'PGlite' : 'PostgreSQL';
    const name = `reputation on ${driver}, ${REPUTATION_DEALS.toLocaleString('en-US')} deals`;
    const skipped = reputationSkipReason(kind, benchDatabaseUrl());
    if (skipped) {
      results.reputationSkipped.push(`${driver}: skipped, ${skipped}`);
      log(`${name}: skipped (${skipped})`);
      continue;
    }
    if (stop.signal.aborted) return;
    await section(name, () =>
      measureReputation(kind, benchDatabaseUrl(), stop.signal, sink, log, serverLog),
    );
  }
}

/** Writes' latency while one agent sends only queries past their time limit (sql-timeouts.ts). */
async function sqlTimeouts(): Promise<void> {
  const figures: SqlTimeoutsFigure[] = [];
  for (const kind of ['pglite', 'postgres'] as const) {
    const driver = kind === 'pglite' ? 'PGlite' : 'PostgreSQL';
    if (kind === 'postgres' && !benchDatabaseUrl()) {
      results.notes.push(
        'SQL timeouts on PostgreSQL: skipped, no BENCH_DATABASE_URL or DATABASE_URL',
      );
      continue;
    }
    if (stop.signal.aborted) break;
    await section(`writes beside queries past their time limit on ${driver}`, () =>
      measureSqlTimeouts(
        kind,
        benchDatabaseUrl(),
        stop.signal,
        (figure) => figures.push(figure),
        log,
        serverLog,
      ),
    );
  }
  if (figures.length > 0) {
    const shown = sqlTimeoutsTable(figures);
    log(`writes beside queries past their time limit:\n${shown}`);
    results.notes.push(
      `Writes beside queries past their time limit (bench/sql-timeouts.ts):\n${shown}`,
    );
  }
}

async function idleMemory(): Promise<void> {
  if (!idleRssAvailable()) return;
  await section('idle RSS (bench/idle-rss.ts)', async () => {
    results.idleRss = await measureIdleRss(stop.signal);
  });
}

/** The payment watcher on anvil: 10,000 payments awaited, a block of 1,000 transfers (payments.ts). */
async function payments(): Promise<void> {
  const skipped = await paymentsSkipReason();
  if (skipped) {
    results.paymentsSkipped = skipped;
    log(`payments: skipped (${skipped})`);
    return;
  }
  await section('payment watcher, 10,000 awaited, 1,000 transfers in one block', () =>
    measurePayments(stop.signal, (figure) => results.payments.push(figure), log, serverLog),
  );
}

/** 1,000 whoami commands by email over one SMTP connection, beside a bare smtp-server (email.ts). */
async function email(): Promise<void> {
  await section('commands by email, 1,000 whoami over one SMTP connection', async () => {
    results.email = await measureEmail(stop.signal);
  });
}

/** 10,000 changes delivered to 100 webhook endpoints, beside a bare POST loop (webhooks.ts). */
async function webhooks(): Promise<void> {
  await section(
    `webhook delivery, ${WEBHOOK_CHANGES.toLocaleString('en-US')} changes to ${WEBHOOK_ENDPOINTS} endpoints`,
    async () => {
      results.webhooks = await measureWebhooks(stop.signal, serverLog);
    },
  );
}

/** A victim's small PUTs beside each hostile neighbour, on both drivers (hostile-neighbours.ts). */
async function hostileNeighbours(): Promise<void> {
  await section('small PUTs beside hostile neighbours', async () => {
    const { figures, notes } = await runHostileNeighbours(stop.signal, log, serverLog);
    const shown = hostileNeighboursTable(figures);
    log(`small PUTs beside hostile neighbours:\n${shown}`);
    results.notes.push(
      `Small PUTs beside hostile neighbours (bench/hostile-neighbours.ts):\n${shown}`,
      ...notes,
    );
  });
}

/**
 * 1, 2 and 3 service processes on one PostgreSQL, push across them beside the socket.io
 * PostgreSQL adapter (scale-out.ts). PostgreSQL only: without a database it says so and skips.
 */
async function scaleOut(): Promise<void> {
  const serverUrl = benchDatabaseUrl();
  const skipped = scaleOutSkipReason(serverUrl);
  if (!serverUrl || skipped) {
    results.notes.push(`scale-out: skipped, ${skipped}`);
    log(`scale-out: skipped (${skipped})`);
    return;
  }
  const figures = emptyScaleOut();
  await section('scale-out, 1 to 3 processes on one PostgreSQL', () =>
    measureScaleOut(serverUrl, figures, stop.signal, log),
  );
  const shown = scaleOutLines(figures).join('\n');
  log(shown);
  results.notes.push(shown);
}

/** Prints what there is and leaves; the bench reports problems, it never fails a run. */
function bail(note: string): void {
  results.notes.push(note);
  stop.abort();
  report(results);
  // Remove the PGlite copies, but do not let a stuck close keep the process alive.
  const grace = new Promise((resolve) => setTimeout(resolve, 3_000));
  void Promise.race([closeTestResources(), grace]).finally(() => process.exit(0));
}

const overall = setTimeout(
  () => bail(`stopped by the ${OVERALL_LIMIT_MS / 1000} s overall limit; figures are partial`),
  OVERALL_LIMIT_MS,
);
process.on('uncaughtException', (error) => bail(`crashed: ${error.stack ?? error.message}`));
process.on('unhandledRejection', (reason) => bail(`unhandled rejection: ${String(reason)}`));

log(
  `node ${process.version}, ${availableParallelism()} cores, ulimit -n ${fdLimit()}, ${CLIENTS} clients`,
);
const unknown = [...only].filter((name) => !(SECTIONS as readonly string[]).includes(name));
if (unknown.length > 0) {
  results.notes.push(`BENCH_ONLY names no section ${unknown.join(', ')} (${SECTIONS.join(', ')})`);
}
if (only.size > 0) log(`BENCH_ONLY: ${[...only].join(', ')}`);
// The baseline goes first: attaching socket.io to uWS patches socket.io's Adapter prototype for
// the whole process, and the service's close() never calls io.close(), which would restore it.
// After that, a node:http socket.io server here crashes on its first connection.
if (wanted('push')) {
  await section(`write-to-push, raw socket.io baseline, ${CLIENTS} sockets`, baselinePushes);
}
if (wanted('throughput')) await throughput();
if (wanted('signatures')) await signatures();
// Early, and short (a few seconds): the later sections can run into BENCH_LIMIT_S.
if (wanted('files')) await files();
if (wanted('push')) await servicePushes();
if (wanted('commands')) await writePath();
if (wanted('idle-rss')) await idleMemory();
if (wanted('store') || wanted('chat')) await storeAndChat();
if (wanted('reputation')) await reputation();
if (wanted('sql-timeouts')) await sqlTimeouts();
if (wanted('payments')) await payments();
if (wanted('email')) await email();
if (wanted('webhooks')) await webhooks();
if (wanted('hostile-neighbours')) await hostileNeighbours();
if (wanted('scale-out')) await scaleOut();
// Last: loading 100,000 files takes its time on each driver.
if (wanted('index-sql')) await indexSql();
await closeTestResources();
clearTimeout(overall);
report(results);
// PGlite workers and uWS can outlive their close by a moment; the bench is done, so leave now.
process.exit(0);
