import { availableParallelism, loadavg } from 'node:os';
import type { CommandFigure, WritePath } from './commands.ts';
import type { FileBench, TransferFigure } from './files.ts';
import type { IdleRss } from './idle-rss-section.ts';
import {
  INDEX_SQL_QUERIES,
  type IndexSqlFigure,
  type IndexSqlFixture,
  type IndexSqlPath,
  WARM_UP_ROUNDS,
} from './index-sql.ts';
import { LOAD_GENERATOR, type LoadResult } from './load.ts';
import { emptySamples, type PushSamples } from './push-latency.ts';
import { ms, perSecond, summarize, table } from './stats.ts';

/** Everything measured so far; sections fill it in, so a cut-short run can still be printed. */
export function emptyResults() {
  return {
    rawUws: undefined as LoadResult | undefined,
    whoamiUws: undefined as LoadResult | undefined,
    whoamiNode: undefined as LoadResult | undefined,
    serviceClients: 0,
    baselineClients: 0,
    servicePush: emptySamples(),
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

/** Push p99 from the request's start, against raw socket.io's emit p99. */
function pushRatio(results: Results): string {
  const service = summarize(results.servicePush.fromStart);
  const baseline = summarize(results.baselinePush.fromStart);
  if (!service || !baseline) return 'push p99 vs raw socket.io emit p99: not measured';
  const ratio = service.p99 / baseline.p99;
  return (
    `push p99 from request start, service vs raw socket.io emit: ${ms(service.p99)} / ` +
    `${ms(baseline.p99)} = ${ratio.toFixed(2)}x (target <= 3x: ${verdict(ratio <= 3)})`
  );
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
/** The targets: a 100 MiB PUT at 70% of the raw sink's MB/s or more, under 150 MB extra RSS. */
const PUT_TARGET = 0.7;
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

/** The 100 MiB PUT against the raw sink, and the worst extra RSS of any 100 MiB service PUT. */
function fileRatios(files: FileBench | undefined): string[] {
  const large = (path: string) =>
    files?.figures.find((f) => f.path === path && f.bytes === 100 * 1024 * 1024);
  const service = large('service PUT (uWS)');
  const sink = large('raw uWS upload sink PUT (baseline)');
  if (!service || !sink) return ['100 MiB file PUT vs raw uWS upload sink: not measured'];
  const ratio = service.medianMbPerSecond / sink.medianMbPerSecond;
  const durable = large('raw uWS sink + sha256 + fsync PUT (for reference)');
  const againstDurable = durable
    ? `; ${percent(service.medianMbPerSecond / durable.medianMbPerSecond)} of the sink with sha256 + fsync`
    : '';
  const rss = Math.max(service.peakExtraRssMb ?? 0, files?.firstLargePut?.serviceMb ?? 0);
  return [
    `100 MiB file PUT (uWS) vs raw uWS upload sink: ${service.medianMbPerSecond.toFixed(0)} / ` +
      `${sink.medianMbPerSecond.toFixed(0)} MB/s = ${percent(ratio)} ` +
      `(target >= ${percent(PUT_TARGET)}: ${verdict(ratio >= PUT_TARGET)})${againstDurable}`,
    `peak extra RSS during a 100 MiB file PUT: ${megabytes(rss)} ` +
      `(target < ${RSS_TARGET_MB} MB: ${verdict(rss < RSS_TARGET_MB)})`,
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
          `Fixture: ${fixture.files.toLocaleString('en-US')} indexed markdown files in ${fixture.workspaces} public workspaces, ` +
            `${fixture.listings.toLocaleString('en-US')} of them listings, on the six built-in conventions,`,
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
        'service socket.io (uWS), POST /feedback',
        results.serviceClients,
        results.servicePush,
      ),
      pushRow(
        'raw socket.io on node:http (baseline)',
        results.baselineClients,
        results.baselinePush,
      ),
      pushRow('service GET /changes/wait long-poll', results.serviceClients, results.longPoll),
    ]),
    ...commandSection(results),
  );
  lines.push(...fileSection(results.files));
  if (results.idleRss) lines.push('', 'Idle RSS (bench/idle-rss.ts):', ...results.idleRss.lines);
  lines.push(...indexSqlSection(results));
  const loadAfter = (loadavg()[0] ?? 0).toFixed(2);
  lines.push(
    '',
    'Ratios, all measured in this run:',
    ...[
      ...whoamiRatios(results),
      pushRatio(results),
      ...(commandRatios(results.commands).length > 0
        ? commandRatios(results.commands)
        : ['write path: not measured']),
      ...fileRatios(results.files),
      ...idleRssLines(results),
      ...indexSqlRatios(results.indexSql),
    ].map((line) => `- ${line}`),
    '',
    `1-minute load average: ${results.loadBefore.toFixed(2)} before, ${loadAfter} after ` +
      `(${availableParallelism()} cores; above ~1, other work competed and the figures are noisy).`,
  );
  if (results.serverLog.length > 0) {
    lines.push('', 'Server error log:', ...results.serverLog.map((line) => `- ${line}`));
  }
  if (results.notes.length > 0) lines.push('', 'Notes:', ...results.notes.map((n) => `- ${n}`));
  process.stdout.write(`${lines.join('\n')}\n`);
}
