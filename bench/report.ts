import { availableParallelism, loadavg } from 'node:os';
import type { CommandFigure, DriverKind, WritePath } from './commands.ts';
import type { FanOutFigure, FanOutPath } from './fan-out.ts';
import { DURABLE_SINK, type FileBench, type TransferFigure } from './files.ts';
import type { IdleRss } from './idle-rss-section.ts';
import {
  INDEX_SQL_QUERIES,
  type IndexSqlFigure,
  type IndexSqlFixture,
  type IndexSqlPath,
  WARM_UP_ROUNDS,
} from './index-sql.ts';
import { LOAD_GENERATOR, type LoadResult } from './load.ts';
import { emailLines, emailRatios, type EmailFigure } from './email.ts';
import { paymentsLines, paymentsRatios, type PaymentsFigure } from './payments.ts';
import { emptySamples, type PushSamples } from './push-latency.ts';
import { signaturesLines, signaturesRatios, type SignaturesFigure } from './signatures.ts';
import { REPUTATION_DEALS, type ReputationFigure, type ReputationFixture } from './reputation.ts';
import { ms, perSecond, summarize, table } from './stats.ts';
import type { StoreFixture, StorePageFigure, StoreQueryFigure } from './store.ts';
import { targetsTable } from './targets.ts';
import { webhooksLines, webhooksRatios, type WebhooksFigure } from './webhooks.ts';

/** Everything measured so far; sections fill it in, so a cut-short run can still be printed. */
export function emptyResults() {
  return {
    rawUws: undefined as LoadResult | undefined,
    whoamiUws: undefined as LoadResult | undefined,
    whoamiNode: undefined as LoadResult | undefined,
    /** GET /whoami signed and with a token on one service, and a signature's cost (signatures.ts). */
    signatures: null as SignaturesFigure | null,
    serviceClients: 0,
    baselineClients: 0,
    servicePush: emptySamples(),
    /** The same writes on a server on PostgreSQL (when the bench has a database URL). */
    servicePushPostgres: emptySamples(),
    servicePostgresClients: 0,
    /** Why the PostgreSQL push lane did not run, when it did not. */
    servicePushPostgresSkipped: undefined as string | undefined,
    /** Round trips to the database per write, by driver and write (the driver's own count). */
    roundTrips: [] as { driver: DriverKind; write: string; perWrite: number }[],
    baselinePush: emptySamples(),
    longPoll: emptySamples(),
    /** The write benchmark's figures, in the order measured. */
    commands: [] as CommandFigure[],
    /** How the write benchmark ran (commands per case, in flight), for its heading. */
    commandShape: '',
    /** Why the write benchmark did not run on PostgreSQL, when it did not. */
    commandsPostgresSkipped: undefined as string | undefined,
    /** File PUT/GET through the service beside a raw uWS upload sink and a file copy. */
    files: undefined as FileBench | undefined,
    idleRss: undefined as IdleRss | undefined,
    /** Agents' SQL over the index: each query through the sandbox and directly, per driver. */
    indexSql: [] as IndexSqlFigure[],
    indexSqlFixtures: [] as IndexSqlFixture[],
    /** Why a driver's index SQL benchmark did not run, per driver. */
    indexSqlSkipped: [] as string[],
    storeFixtures: [] as StoreFixture[],
    /** GET /store pages and their static twin under load, per driver. */
    storePages: [] as StorePageFigure[],
    /** Store pages and the documented store/axis_values joins read one at a time (issue 22, target 3). */
    storeQueries: [] as StoreQueryFigure[],
    /** A listing posted to 1,000 watchers, and the floor beside it, per driver. */
    storeWatches: [] as FanOutFigure[],
    /** Message fan-out in a workspace of 10, and the floor beside it, per driver. */
    chat: [] as FanOutFigure[],
    /** Why a driver's store and chat sections did not run, per driver. */
    fanOutSkipped: [] as string[],
    /** The reputation record of an agent with many deals, beside GET /health, per driver. */
    reputation: [] as ReputationFigure[],
    reputationFixtures: [] as ReputationFixture[],
    /** Why a driver's reputation section did not run, per driver. */
    reputationSkipped: [] as string[],
    /** The payment watcher on anvil (payments.ts), and why it did not run, when it did not. */
    payments: [] as PaymentsFigure[],
    paymentsSkipped: null as string | null,
    /** Commands by email beside a bare smtp-server (email.ts). */
    email: null as EmailFigure | null,
    emailSkipped: null as string | null,
    /** Webhook delivery beside a bare loop of POSTs (webhooks.ts). */
    webhooks: null as WebhooksFigure | null,
    webhooksSkipped: null as string | null,
    notes: [] as string[],
    /** What the servers logged as internal errors (first lines only). */
    serverLog: [] as string[],
    /** 1-minute load average before and after: above ~1 on 2 cores, something else competed. */
    loadBefore: loadavg()[0] ?? 0,
  };
}

export type Results = ReturnType<typeof emptyResults>;

const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
const perCpuSecond = (value: number) => `${Math.round(value).toLocaleString('en-US')} req/CPU-s`;

function loadRow(name: string, result: LoadResult | undefined): string[] {
  return [
    name,
    perSecond(result?.requestsPerSecond),
    result ? perCpuSecond(result.requestsPerCpuSecond) : '-',
    result ? `${result.latencyP50Ms} ms` : '-',
    result ? `${result.latencyP99Ms} ms` : '-',
    result ? `${Math.round(result.serverCpuPercent)}%` : '-',
    result ? String(result.failures) : '-',
  ];
}

/** Round trips to the database per write, counted by the driver itself (Driver.roundTrips). */
function roundTripLines(results: Results): string[] {
  if (results.roundTrips.length === 0) return [];
  return [
    '',
    'Round trips to the database per write (counted by the driver: a message to the PGlite thread,',
    "or a wait for PostgreSQL's answer; statements sent together count once):",
    table([
      ['driver', 'write', 'round trips'],
      ...results.roundTrips.map((row) => [row.driver, row.write, row.perWrite.toFixed(2)]),
    ]),
  ];
}

function pushRow(name: string, clients: number, samples: PushSamples): string[] {
  const fromResponse = summarize(samples.fromResponse);
  const fromStart = summarize(samples.fromStart);
  const post = summarize(samples.post);
  return [
    name,
    String(clients),
    String(fromResponse?.count ?? 0),
    ms(fromResponse?.p50),
    ms(fromResponse?.p99),
    ms(fromStart?.p50),
    ms(fromStart?.p99),
    ms(fromStart?.max),
    ms(post?.p50),
    String(samples.early),
    String(samples.lost),
  ];
}

/** whoami against raw uWS: by throughput, and per second of the server's own CPU (the target). */
function whoamiRatios(results: Results): string[] {
  const { rawUws, whoamiUws, whoamiNode } = results;
  if (!rawUws || !whoamiUws) return ['GET /whoami vs raw uWS: not measured'];
  const byThroughput = whoamiUws.requestsPerSecond / rawUws.requestsPerSecond;
  const byCpu = whoamiUws.requestsPerCpuSecond / rawUws.requestsPerCpuSecond;
  const lines = [
    `GET /whoami (uWS) vs raw uWS hello world: ${percent(byCpu)} per server CPU-second ` +
      `(target >= 50%: ${verdict(byCpu >= 0.5)}); ${percent(byThroughput)} by throughput`,
  ];
  if (whoamiNode) {
    const nodeByCpu = whoamiNode.requestsPerCpuSecond / rawUws.requestsPerCpuSecond;
    lines.push(
      `GET /whoami (node:http) vs raw uWS hello world: ${percent(nodeByCpu)} per server CPU-second; ` +
        `${percent(whoamiNode.requestsPerSecond / rawUws.requestsPerSecond)} by throughput`,
    );
  }
  return lines;
}

/** Push p99 from the request's start, per driver, against raw socket.io's emit p99. */
function pushRatios(results: Results): string[] {
  const baseline = summarize(results.baselinePush.fromStart);
  const lanes = [
    ['PGlite', results.servicePush],
    ['PostgreSQL', results.servicePushPostgres],
  ] as const;
  return lanes.map(([driver, samples]) => {
    const service = summarize(samples.fromStart);
    if (!service || !baseline)
      return `push p99 on ${driver} vs raw socket.io emit p99: not measured`;
    const ratio = service.p99 / baseline.p99;
    return (
      `push p99 from request start on ${driver}, service vs raw socket.io emit: ${ms(service.p99)} / ` +
      `${ms(baseline.p99)} = ${ratio.toFixed(2)}x (target <= 3x: ${verdict(ratio <= 3)})`
    );
  });
}

function commandRow(figure: CommandFigure): string[] {
  const { result } = figure;
  return [
    figure.driver,
    figure.command,
    figure.actors.toLocaleString('en-US'),
    figure.path,
    String(result.count),
    `${Math.round(result.perSecond).toLocaleString('en-US')}/s`,
    ms(result.p50Ms),
    ms(result.p99Ms),
    ms(result.maxMs),
    `${Math.round(result.cpuUsPerOperation)} µs`,
    String(result.failures),
  ];
}

/** The registry against each baseline of the same driver, command and spread. */
function commandRatios(figures: readonly CommandFigure[]): string[] {
  const lines: string[] = [];
  for (const registry of figures.filter((f) => f.path === 'registry.command')) {
    const sameCase = (path: WritePath) =>
      figures.find(
        (f) =>
          f.path === path &&
          f.driver === registry.driver &&
          f.command === registry.command &&
          f.actors === registry.actors,
      );
    const against = (['raw driver transaction', 'raw postgres.js sql.begin'] as const)
      .map((path) => ({ path, baseline: sameCase(path) }))
      .filter((pair) => pair.baseline !== undefined);
    if (against.length === 0) continue;
    const parts = against.map(({ path, baseline }) => {
      const b = (baseline as CommandFigure).result;
      const r = registry.result;
      const cpu = r.cpuUsPerOperation - b.cpuUsPerOperation;
      return (
        `${percent(r.perSecond / b.perSecond)} of ${path} ` +
        `(p99 ${ms(r.p99Ms)} vs ${ms(b.p99Ms)}, CPU ${cpu >= 0 ? '+' : ''}${Math.round(cpu)} µs/command)`
      );
    });
    const actors =
      registry.actors === 1 ? '1 actor' : `${registry.actors.toLocaleString('en-US')} actors`;
    lines.push(
      `${registry.driver} ${registry.command}, ${actors}: registry.command ${parts.join('; ')}`,
    );
  }
  return lines;
}

function commandSection(results: Results): string[] {
  const lines = [
    '',
    `Write path: commands through registry.command, in-process (no HTTP), ${results.commandShape}.`,
    'feed.read = readFeedPage limit 1 (GET /changes: read one change, move the place, write the',
    "agent's row under its version); feedback = POST /feedback's command (feedback row + 2 change",
    'rows). Baselines: the same SQL statements as one raw transaction, one at a time per actor (the',
    'least a mailbox does), on the same driver; on PostgreSQL also through postgres.js sql.begin.',
    'Each path writes to agents of its own; the paths take turns in 4 rounds, so a machine whose',
    'load comes and goes weighs on all of them alike.',
    'CPU/cmd: CPU of this whole process (PGlite worker included; PostgreSQL server processes not) per',
    'command; the callers run in this process too.',
  ];
  if (results.commands.length > 0) {
    lines.push(
      table([
        [
          'driver',
          'command',
          'actors',
          'path',
          'n',
          'commands',
          'p50',
          'p99',
          'max',
          'CPU/cmd',
          'failed',
        ],
        ...results.commands.map(commandRow),
      ]),
    );
  } else lines.push('(no figures)');
  if (results.commandsPostgresSkipped) {
    lines.push(`PostgreSQL: skipped, ${results.commandsPostgresSkipped}.`);
  }
  return lines;
}

const megabytes = (value: number) => `${value.toFixed(1)} MB`;
const sizeLabel = (bytes: number) => `${bytes / 1024 / 1024} MiB`;
/**
 * Issue 36, target 3: a 100 MiB PUT at 90% of the durable sink's MB/s, a 1 MiB PUT at 60%;
 * and a 100 MiB PUT under 150 MB of extra RSS.
 */
const PUT_TARGET = 0.9;
const SMALL_PUT_TARGET = 0.6;
const RSS_TARGET_MB = 150;

function fileRow(figure: TransferFigure): string[] {
  return [
    figure.path,
    sizeLabel(figure.bytes),
    String(figure.runs),
    `${figure.medianMbPerSecond.toFixed(0)} MB/s`,
    `${figure.bestMbPerSecond.toFixed(0)} MB/s`,
    figure.peakExtraRssMb === undefined ? '-' : megabytes(figure.peakExtraRssMb),
  ];
}

function fileSection(files: FileBench | undefined): string[] {
  const lines = [
    '',
    'Files: PUT and GET through the service (uWS engine, PGlite, a fresh workspace) beside a raw',
    'uWS upload sink (a bare app writing each body to a file, pausing the socket while the file',
    'is full) and a file copy on the same disk. Client: node:http in this process, one keep-alive',
    'socket, the body streamed in 256 KiB pieces (it never holds a file). Each run a new version;',
    'service and sink take turns run by run, after one untimed round. MB = 10^6 bytes. The',
    'sink + sha256 + fsync row adds the work every service PUT must do (hash, durable write).',
    'peak extra RSS: this process above its level before the PUT, sampled every 20 ms, worst run.',
  ];
  if (!files || files.figures.length === 0) return [...lines, '(no figures)'];
  lines.push(
    table([
      ['path', 'size', 'runs', 'median', 'best', 'peak extra RSS'],
      ...files.figures.map(fileRow),
    ]),
  );
  if (files.firstLargePut) {
    lines.push(
      `First 100 MiB PUT of the run (untimed): peak extra RSS ${megabytes(files.firstLargePut.serviceMb)} ` +
        `through the service, ${megabytes(files.firstLargePut.sinkMb)} through the raw sink.`,
    );
  }
  if (files.fewestRssSamples !== undefined) {
    lines.push(`RSS samples in the shortest sampled PUT: ${files.fewestRssSamples}.`);
  }
  return lines;
}

/** A PUT of `bytes` through the service against the durable sink (issue 36, target 3). */
function putRatio(files: FileBench | undefined, bytes: number, label: string, target: number) {
  const find = (path: string) => files?.figures.find((f) => f.path === path && f.bytes === bytes);
  const service = find('service PUT (uWS)');
  const durable = find(DURABLE_SINK);
  const raw = find('raw uWS upload sink PUT (baseline)');
  if (!service || !durable) return `${label} file PUT vs the durable sink: not measured`;
  const ratio = service.medianMbPerSecond / durable.medianMbPerSecond;
  const againstRaw = raw
    ? `; ${percent(service.medianMbPerSecond / raw.medianMbPerSecond)} of the raw sink (${raw.medianMbPerSecond.toFixed(0)} MB/s, no hash, no fsync)`
    : '';
  return (
    `${label} file PUT (uWS) vs the durable sink (sha256 + fsync): ` +
    `${service.medianMbPerSecond.toFixed(0)} / ${durable.medianMbPerSecond.toFixed(0)} MB/s = ` +
    `${percent(ratio)} (target >= ${percent(target)}: ${verdict(ratio >= target)})${againstRaw}`
  );
}

/** Both PUTs against the durable sink, the statements per save, and the 100 MiB PUT's extra RSS. */
function fileRatios(files: FileBench | undefined): string[] {
  const counted = files?.statementsPerSave;
  const service = files?.figures.find(
    (f) => f.path === 'service PUT (uWS)' && f.bytes === 100 * 1024 * 1024,
  );
  const rss = Math.max(service?.peakExtraRssMb ?? 0, files?.firstLargePut?.serviceMb ?? 0);
  return [
    putRatio(files, 1024 * 1024, '1 MiB', SMALL_PUT_TARGET),
    ...(counted
      ? [
          `a 1 MiB save: ${counted.statements} SQL statements in ${counted.transactions} transactions`,
        ]
      : []),
    putRatio(files, 100 * 1024 * 1024, '100 MiB', PUT_TARGET),
    ...(service
      ? [
          `peak extra RSS during a 100 MiB file PUT: ${megabytes(rss)} ` +
            `(target < ${RSS_TARGET_MB} MB: ${verdict(rss < RSS_TARGET_MB)})`,
        ]
      : []),
  ];
}

const driverName = (kind: string) => (kind === 'pglite' ? 'PGlite' : 'PostgreSQL');
const oneLine = (sql: string) => sql.replace(/\s+/g, ' ').trim();

function indexSqlRow(figure: IndexSqlFigure): string[] {
  return [
    driverName(figure.driver),
    figure.query,
    figure.path,
    String(figure.count),
    ms(figure.p50Ms),
    ms(figure.p95Ms),
    ms(figure.maxMs),
    figure.rows === undefined ? '-' : String(figure.rows),
    String(figure.failures),
  ];
}

function indexSqlSection(results: Results): string[] {
  const [fixture] = results.indexSqlFixtures;
  const loads = results.indexSqlFixtures
    .map((f) => `${driverName(f.driver)} ${f.loadSeconds.toFixed(1)} s`)
    .join(', ');
  const limits = results.indexSqlFixtures
    .map((f) => `${f.sqlTimeoutMs} ms on ${driverName(f.driver)}`)
    .join(', ');
  const lines = [
    '',
    "Index SQL (POST /index/sql): agents' SQL over the index, through the sandbox beside the same",
    'question asked of the tables directly.',
    ...(fixture
      ? [
          `Fixture: ${fixture.files.toLocaleString('en-US')} indexed markdown files in ${fixture.workspaces} workspaces (${fixture.privateWorkspaces} private; ` +
            `the reader's own hold ${fixture.readerFiles.toLocaleString('en-US')}), ${fixture.listings.toLocaleString('en-US')} of them listings, on the six built-in conventions,`,
          `${fixture.cities} cities, bodies of a few sentences from ${fixture.words} words; written by SQL and ANALYZEd (${loads}).`,
        ]
      : []),
    "sandbox: runIndexQuery in-process with the server's services and an agent's principal (no HTTP):",
    'the policy check, the scope CTEs over the views, the binding statement, the reader role, the',
    'time limit, the agents\' pool. "policy check skipped": the sandbox\'s wrapped text on the same',
    'transaction without checkUserSql. direct: the same question over the base tables, in a read-only',
    'transaction on the same driver. "policy check alone": checkUserSql by itself (CPU, this process).',
    `The paths take turns query by query, after ${WARM_UP_ROUNDS} untimed rounds.`,
    ...INDEX_SQL_QUERIES.map((q) => `- ${q.query} (scope ${q.scope}): ${oneLine(q.sandbox)}`),
  ];
  if (limits) lines.push(`The service's time limit for agents' SQL: ${limits}.`);
  if (results.indexSql.length > 0) {
    lines.push(
      table([
        ['driver', 'query', 'path', 'n', 'p50', 'p95', 'max', 'rows', 'failed'],
        ...results.indexSql.map(indexSqlRow),
      ]),
    );
  } else lines.push('(no figures)');
  lines.push(...results.indexSqlSkipped.map((line) => `${line}.`));
  return lines;
}

/** Sandbox p50 minus direct p50, per driver and query, and what it is made of. */
function indexSqlRatios(figures: readonly IndexSqlFigure[]): string[] {
  const lines: string[] = [];
  for (const sandbox of figures.filter((f) => f.path === 'sandbox: runIndexQuery')) {
    const sameCase = (path: IndexSqlPath) =>
      figures.find(
        (f) => f.path === path && f.driver === sandbox.driver && f.query === sandbox.query,
      );
    const direct = sameCase('direct SQL on the tables');
    const skipped = sameCase('sandbox SQL, policy check skipped');
    const check = sameCase('policy check alone: checkUserSql');
    if (!direct || sandbox.count === 0 || direct.count === 0) continue;
    const overhead = sandbox.p50Ms - direct.p50Ms;
    const parts = [
      ...(check ? [`policy check ${ms(check.p50Ms)}`] : []),
      ...(skipped ? [`views, binding and time limit ${ms(skipped.p50Ms - direct.p50Ms)}`] : []),
    ];
    const rows =
      sandbox.rows === direct.rows ? '' : `; rows differ: ${sandbox.rows} vs ${direct.rows}`;
    // The sandbox cannot cost less than nothing: a negative difference is two different plans.
    const target =
      overhead < 0
        ? 'not comparable: the direct SQL planned slower; BENCH_EXPLAIN=1 prints both plans'
        : `target < 1 ms: ${verdict(overhead < 1)}`;
    lines.push(
      `index SQL ${driverName(sandbox.driver)} ${sandbox.query}: sandbox p50 ${ms(sandbox.p50Ms)} - ` +
        `direct p50 ${ms(direct.p50Ms)} = ${ms(overhead)} (${target})` +
        `${parts.length > 0 ? `; ${parts.join(', ')}` : ''}${rows}`,
    );
  }
  return lines.length > 0 ? lines : ['index SQL sandbox overhead: not measured'];
}

const bytesPerSecond = (bytes: number, perSecondValue: number) =>
  `${((bytes * perSecondValue) / 1e6).toFixed(1)} MB/s`;

function storePageRow(figure: StorePageFigure): string[] {
  const { result } = figure;
  return [
    driverName(figure.driver),
    `${figure.page}: GET ${figure.path}`,
    figure.bytes.toLocaleString('en-US'),
    perSecond(result.requestsPerSecond),
    bytesPerSecond(figure.bytes, result.requestsPerSecond),
    perCpuSecond(result.requestsPerCpuSecond),
    `${result.latencyP50Ms} ms`,
    `${result.latencyP99Ms} ms`,
    `${Math.round(result.serverCpuPercent)}%`,
    String(result.failures),
  ];
}

const FAN_OUT_LABELS: Record<FanOutPath, string> = {
  service: 'service',
  'bare socket.io room emit': 'bare socket.io, room emit (baseline)',
  'bare socket.io emit per socket': 'bare socket.io, emit per socket (baseline)',
  "bare socket.io emit per socket, the service's event":
    "bare socket.io, emit per socket of the service's event (baseline)",
};

function fanOutRow(figure: FanOutFigure, service: string): string[] {
  const { samples } = figure;
  const last = summarize(samples.last);
  const each = summarize(samples.all);
  const post = summarize(samples.post);
  return [
    driverName(figure.driver),
    figure.path === 'service' ? service : FAN_OUT_LABELS[figure.path],
    figure.receivers.toLocaleString('en-US'),
    figure.connected.toLocaleString('en-US'),
    String(samples.writes),
    ms(last?.p50),
    ms(last?.p99),
    ms(last?.max),
    ms(each?.p50),
    ms(each?.p99),
    ms(post?.p50),
    String(samples.lost),
  ];
}

const FAN_OUT_HEADER = [
  'driver',
  'path',
  'receivers',
  'connected',
  'writes',
  'p50 last',
  'p99 last',
  'max last',
  'p50 each',
  'p99 each',
  'p50 POST',
  'lost',
];

const FLOOR_TEXT = [
  'Floor: bare socket.io on uWS (bench/fan-out.ts), its own sockets, emitting on a POST; open beside',
  "the driver's server, the two taking turns write by write. Clients in this process.",
];

function storeSection(results: Results): string[] {
  const [fixture] = results.storeFixtures;
  const loads = results.storeFixtures
    .map((f) => `${driverName(f.driver)} ${f.loadSeconds.toFixed(1)} s`)
    .join(', ');
  const lines = [
    '',
    'Store: GET /store as an anonymous agent reads it (markdown, default page of 50), beside a static',
    "document of the same size served by the same engine (uWS) in the same run: the service's /terms",
    'on a second server whose privacy URL (a placeholder /terms names once) is padded with the first',
    "page's own text to the first page's byte size. Load as for GET /whoami (10 connections, 5 s",
    'after 1 s); the server also holds the connected agents below. MB/s = body bytes x requests/s.',
    "On PostgreSQL, the database server's CPU is not counted per CPU-second.",
    ...(fixture
      ? [
          `Fixture: ${fixture.listings.toLocaleString('en-US')} listings (${fixture.localServices.toLocaleString('en-US')} on local-services, the rest on agent-services) in ` +
            `${fixture.workspaces} public workspaces of ${fixture.owners} agents, the filtered page's filters matching ` +
            `${fixture.filteredMatches}; written by SQL and ANALYZEd (${loads}).`,
        ]
      : []),
  ];
  if (results.storePages.length > 0) {
    lines.push(
      table([
        [
          'driver',
          'page',
          'bytes',
          'requests/s',
          'MB/s',
          'per CPU-second',
          'p50',
          'p99',
          'server CPU',
          'non-2xx/errors',
        ],
        ...results.storePages.map(storePageRow),
      ]),
    );
  } else lines.push('(no page figures)');
  if (results.storeQueries.length > 0) {
    lines.push(
      '',
      'Store queries one at a time (no other load; markdown pages as an anonymous agent, then the',
      "joins /index/protocol gives, POST /index/sql scope store). Limit: the page's p95 target, or",
      "the service's SQL time limit for a join.",
      table([
        ['driver', 'query', 'reads', 'failed', 'p50', 'p95', 'p99', 'limit', 'met', 'rows'],
        ...results.storeQueries.map((f) => [
          driverName(f.driver),
          f.query,
          String(f.count),
          String(f.failures),
          ms(f.p50Ms),
          ms(f.p95Ms),
          ms(f.p99Ms),
          ms(f.limitMs),
          f.count > 0 && f.failures === 0 && f.p95Ms < f.limitMs ? 'yes' : 'no',
          String(f.rows),
        ]),
      ]),
    );
  }
  lines.push(
    '',
    'Watchers: every connected agent saved the watch {convention: local-services, axis: place,',
    'value: Berlin}; another agent posts matching listings (POST /listings) one at a time. "last":',
    'POST sent -> the last watcher\'s listing.posted; "each": POST sent -> every watcher\'s. With 20',
    'writes, p99 is the slowest. The floor emits to as many sockets, as one room emit and as one',
    'emit per socket (the service sends each agent its own change), of a tiny event, and once',
    'more per socket with a listing.posted a watcher received (as many bytes, as deep).',
    ...FLOOR_TEXT,
  );
  const rows = results.storeWatches.map((f) => fanOutRow(f, 'POST /listings -> listing.posted'));
  lines.push(rows.length > 0 ? table([FAN_OUT_HEADER, ...rows]) : '(no watcher figures)');
  return lines;
}

function chatSection(results: Results): string[] {
  const lines = [
    '',
    'Message fan-out: a private workspace of 10 members (made, invited and joined over HTTP), all',
    'connected among every connected agent; one member sends messages one at a time. "each": POST',
    'sent -> message.sent at each of the 9 others; "last": at the last of them. The floor emits to a',
    'room of 10 of its sockets, timed at all 10.',
    ...FLOOR_TEXT,
  ];
  const rows = results.chat.map((f) => fanOutRow(f, 'POST messages -> message.sent'));
  lines.push(rows.length > 0 ? table([FAN_OUT_HEADER, ...rows]) : '(no figures)');
  lines.push(...results.fanOutSkipped.map((line) => `${line}.`));
  return lines;
}

/** Each page against the static document of its driver's run, by throughput and by CPU. */
function storeRatios(results: Results): string[] {
  const lines: string[] = [];
  const drivers = [...new Set(results.storePages.map((f) => f.driver))] as DriverKind[];
  for (const driver of drivers) {
    const pages = results.storePages.filter((f) => f.driver === driver);
    const twin = pages.find((f) => f.page === 'static document (baseline)');
    for (const page of pages.filter((f) => f !== twin)) {
      if (!twin) {
        lines.push(`GET ${page.path} (${driverName(driver)}): no static document measured`);
        continue;
      }
      const r = page.result;
      const b = twin.result;
      lines.push(
        `GET ${page.path} (${driverName(driver)}, ${page.bytes.toLocaleString('en-US')} B) vs a static document of ` +
          `${twin.bytes.toLocaleString('en-US')} B: ${percent(r.requestsPerSecond / b.requestsPerSecond)} by throughput ` +
          `(${perSecond(r.requestsPerSecond)} vs ${perSecond(b.requestsPerSecond)}), ` +
          `${percent(r.requestsPerCpuSecond / b.requestsPerCpuSecond)} per server CPU-second; ` +
          `p99 ${r.latencyP99Ms} ms vs ${b.latencyP99Ms} ms`,
      );
    }
  }
  for (const service of results.storeWatches.filter((f) => f.path === 'service')) {
    const last = summarize(service.samples.last);
    if (!last) continue;
    const floor = (path: FanOutPath) =>
      summarize(
        results.storeWatches.find((f) => f.driver === service.driver && f.path === path)?.samples
          .last ?? [],
      );
    const room = floor('bare socket.io room emit');
    const each = floor('bare socket.io emit per socket');
    const shaped = floor("bare socket.io emit per socket, the service's event");
    const against =
      room && each && shaped
        ? ` vs ${ms(room.p99)} for a bare socket.io room emit and ${ms(each.p99)} for one emit per socket ` +
          `of a tiny event (${(last.p99 / each.p99).toFixed(1)}x), ${ms(shaped.p99)} of the service's event ` +
          `(${(last.p99 / shaped.p99).toFixed(1)}x)`
        : ' (no floor measured)';
    // A listing is a file: the part of each post that waited for its bytes to be durable.
    const put = summarize(service.samples.durable ?? []);
    const less = summarize(service.samples.lastLessDurable ?? []);
    const durable =
      put && less
        ? `; each post waited for its bytes to be durable (the blob store's put, fsyncs and all) ` +
          `p50 ${ms(put.p50)}, p99 ${ms(put.p99)}, max ${ms(put.max)}, and less that wait ` +
          `its p99 is ${ms(less.p99)}${shaped ? ` (${(less.p99 / shaped.p99).toFixed(1)}x the event's floor)` : ''}`
        : '';
    lines.push(
      `listing.posted to ${service.receivers.toLocaleString('en-US')} watchers (${driverName(service.driver)}): ` +
        `p99 to the last ${ms(last.p99)}, p50 ${ms(last.p50)}${against}${durable}`,
    );
  }
  return lines.length > 0 ? lines : ['store: not measured'];
}

function chatRatios(results: Results): string[] {
  const lines = results.chat
    .filter((f) => f.path === 'service')
    .flatMap((service) => {
      const each = summarize(service.samples.all);
      const last = summarize(service.samples.last);
      if (!each || !last) return [];
      const floor = summarize(
        results.chat.find((f) => f.driver === service.driver && f.path !== 'service')?.samples
          .all ?? [],
      );
      return [
        `message fan-out (${driverName(service.driver)}), ${service.receivers + 1} members among ` +
          `${service.connected.toLocaleString('en-US')}: p99 send -> receive ${ms(each.p99)} at each receiver ` +
          (floor
            ? `(${(each.p99 / floor.p99).toFixed(2)}x the bare room emit; target <= 3x: ${verdict(each.p99 <= 3 * floor.p99)}), `
            : '') +
          `${ms(last.p99)} at the last; ` +
          `p50 ${ms(each.p50)}` +
          (floor
            ? `; bare room emit p99 ${ms(floor.p99)}, p50 ${ms(floor.p50)}`
            : '; no floor measured'),
      ];
    });
  return lines.length > 0 ? lines : ['message fan-out: not measured'];
}

function idleRssLines(results: Results): string[] {
  const idle = results.idleRss;
  if (!idle) {
    return ['idle RSS: not measured (bench/idle-rss.ts is not there, or BENCH_ONLY left it out)'];
  }
  if (idle.freshMb === undefined || idle.restartMb === undefined) {
    return ['idle RSS: see the idle RSS section above'];
  }
  return [
    `idle RSS of the service on PGlite: first start on a new DATA_DIR ${idle.freshMb} MB, ` +
      `restart on the same data ${idle.restartMb} MB`,
  ];
}

function reputationSection(results: Results): string[] {
  const deals = REPUTATION_DEALS.toLocaleString('en-US');
  const lines = [
    '',
    `Reputation endpoint for an agent with ${deals} deals: GET /agents/<id>/reputation over HTTP (no`,
    'token), one request at a time, beside GET /health on the same server (the same door and one',
    "database round trip: the baseline) and the record's own SQL (storage/deals/reputation.ts reputationOf) run",
    'directly on the driver. The lanes take turns request by request, after untimed warm-up rounds.',
    ...results.reputationFixtures.map(
      (f) =>
        `Fixture (${driverName(f.driver)}): ${f.deals.toLocaleString('en-US')} closed deals with ` +
        `${f.counterparties} counterparties (skewed), ${f.ratings.toLocaleString('en-US')} ratings ` +
        `(a tenth of those received corrected once), written by SQL and ANALYZEd in ${f.loadSeconds.toFixed(1)} s; ` +
        `the endpoint answered deals_agreed ${f.answered.deals_agreed}, distinct_counterparties ` +
        `${f.answered.distinct_counterparties}, ${f.answered.ratings} ratings.`,
    ),
  ];
  if (results.reputation.length > 0) {
    lines.push(
      table([
        ['driver', 'path', 'n', 'p50', 'p95', 'p99', 'max', 'failed'],
        ...results.reputation.map((f) => [
          driverName(f.driver),
          f.lane,
          String(f.count),
          ms(f.p50Ms),
          ms(f.p95Ms),
          ms(f.p99Ms),
          ms(f.maxMs),
          String(f.failures),
        ]),
      ]),
    );
  } else lines.push('(no figures)');
  lines.push(...results.reputationSkipped.map((line) => `${line}.`));
  return lines;
}

/** The endpoint against GET /health of its driver's run, and the share of its own SQL. */
function reputationRatios(results: Results): string[] {
  const lines: string[] = [];
  for (const driver of [...new Set(results.reputation.map((f) => f.driver))]) {
    const lane = (name: ReputationFigure['lane']) =>
      results.reputation.find((f) => f.driver === driver && f.lane === name && f.count > 0);
    const record = lane('GET /agents/<id>/reputation');
    const health = lane('GET /health (baseline)');
    const sql = lane('reputationOf SQL on the driver');
    if (!record) continue;
    lines.push(
      `Reputation endpoint for an agent with ${REPUTATION_DEALS.toLocaleString('en-US')} deals ` +
        `(${driverName(driver)}): p50 ${ms(record.p50Ms)}, p95 ${ms(record.p95Ms)}, ` +
        `p99 ${ms(record.p99Ms)} (target p99 < 5 ms: ${record.p99Ms < 5 ? 'met' : 'not met'})` +
        (health
          ? `; GET /health p50 ${ms(health.p50Ms)}, p99 ${ms(health.p99Ms)} ` +
            `(${(record.p50Ms / health.p50Ms).toFixed(1)}x at p50)`
          : '; no baseline measured') +
        (sql ? `; its SQL alone p50 ${ms(sql.p50Ms)}, p99 ${ms(sql.p99Ms)}` : ''),
    );
  }
  return lines.length > 0 ? lines : ['reputation endpoint: not measured'];
}

/** The closing report: each figure beside its baseline, then the ratios the targets are set on. */
export function report(results: Results): void {
  const { rawUws, whoamiUws, whoamiNode } = results;
  const lines = [
    '',
    `Throughput: ${LOAD_GENERATOR} in a child process (its own core; the server runs in this process, node ${process.execArgv.join(' ') || '(no flags)'}),`,
    `10 connections, pipelining 1, 5 s after a 1 s warm-up, loopback, port 0. ${availableParallelism()} cores.`,
    'req/CPU-s: requests answered / CPU seconds of this process (server and its PGlite worker; not the',
    'load generator, a child process) over the same window (process.cpuUsage before and after).',
    ...(process.env.DATABASE_URL
      ? ["The service ran on DATABASE_URL's PostgreSQL here: that server's own CPU is not counted."]
      : []),
    table([
      ['target', 'requests/s', 'per CPU-second', 'p50', 'p99', 'server CPU', 'non-2xx/errors'],
      loadRow('raw uWS hello world (baseline)', rawUws),
      loadRow('GET /whoami, uWS engine', whoamiUws),
      loadRow('GET /whoami, node:http engine', whoamiNode),
    ]),
  ];
  if (rawUws && rawUws.serverCpuPercent < 90) {
    lines.push(
      `raw uWS used ${Math.round(rawUws.serverCpuPercent)}% of a core: the load generator (or a busy machine),`,
      'not uWS, was the limit, so compare per CPU-second rather than by throughput.',
    );
  }
  lines.push(...signaturesLines(results.signatures));
  lines.push(
    '',
    'Write-to-push latency: sequential writes by one sender, fan-out 1, clients in this process.',
    '"from response": fetch resolved -> change received (0 when the push came first);',
    '"from start": POST sent -> change received. early = pushes that beat the HTTP answer;',
    '"p50 POST": the write\'s own round trip. The long-poll row keeps the sockets connected.',
    table([
      [
        'path',
        'clients',
        'n',
        'p50 resp',
        'p99 resp',
        'p50 start',
        'p99 start',
        'max start',
        'p50 POST',
        'early',
        'lost',
      ],
      pushRow(
        'service socket.io (uWS, PGlite), POST /feedback',
        results.serviceClients,
        results.servicePush,
      ),
      pushRow(
        'service socket.io (uWS, PostgreSQL), POST /feedback',
        results.servicePostgresClients,
        results.servicePushPostgres,
      ),
      pushRow(
        'raw socket.io on node:http (baseline)',
        results.baselineClients,
        results.baselinePush,
      ),
      pushRow('service GET /changes/wait long-poll', results.serviceClients, results.longPoll),
    ]),
    ...(results.servicePushPostgresSkipped
      ? [`PostgreSQL push lane: skipped (${results.servicePushPostgresSkipped}).`]
      : []),
    ...roundTripLines(results),
    ...commandSection(results),
  );
  lines.push(...fileSection(results.files));
  if (results.idleRss) lines.push('', 'Idle RSS (bench/idle-rss.ts):', ...results.idleRss.lines);
  lines.push(...indexSqlSection(results));
  lines.push(...storeSection(results), ...chatSection(results));
  lines.push(...reputationSection(results));
  lines.push(...paymentsLines(results.payments, results.paymentsSkipped));
  lines.push(...emailLines(results.email, results.emailSkipped));
  lines.push(...webhooksLines(results.webhooks, results.webhooksSkipped));
  const loadAfter = (loadavg()[0] ?? 0).toFixed(2);
  lines.push(
    '',
    'Ratios, all measured in this run:',
    ...[
      ...whoamiRatios(results),
      ...signaturesRatios(results.signatures),
      ...pushRatios(results),
      ...(commandRatios(results.commands).length > 0
        ? commandRatios(results.commands)
        : ['write path: not measured']),
      ...fileRatios(results.files),
      ...idleRssLines(results),
      ...indexSqlRatios(results.indexSql),
      ...storeRatios(results),
      ...chatRatios(results),
      ...reputationRatios(results),
      ...paymentsRatios(results.payments),
      ...emailRatios(results.email),
      ...webhooksRatios(results.webhooks),
    ].map((line) => `- ${line}`),
    '',
    `1-minute load average: ${results.loadBefore.toFixed(2)} before, ${loadAfter} after ` +
      `(${availableParallelism()} cores; above ~1, other work competed and the figures are noisy).`,
  );
  if (results.serverLog.length > 0) {
    lines.push('', 'Server error log:', ...results.serverLog.map((line) => `- ${line}`));
  }
  if (results.notes.length > 0) lines.push('', 'Notes:', ...results.notes.map((n) => `- ${n}`));
  lines.push(...targetsTable(results));
  process.stdout.write(`${lines.join('\n')}\n`);
}
