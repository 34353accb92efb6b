import type { FanOutFigure, FanOutPath } from './fan-out.ts';
import type { Results } from './report.ts';
import { DURABLE_SINK, STORE_SINK } from './files.ts';
import { ms, summarize, table } from './stats.ts';

/**
 * The speed targets (issue 36, and the store's from issue 22, which stay), each figure beside
 * the baseline measured in the same run, and whether it is met: the table the bench ends
 * with. A figure not measured in this run says so.
 */
interface TargetRow {
  target: string;
  figure: string;
  baseline: string;
  /** undefined: not measured. */
  met?: boolean;
}

const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
const times = (ratio: number) => `${ratio.toFixed(2)}x`;
const mb = (value: number) => `${Math.round(value)} MB`;
const driverName = (driver: string) => (driver === 'postgres' ? 'PostgreSQL' : 'PGlite');

function whoami(results: Results): TargetRow {
  const target = '6. GET /whoami per server CPU-second >= 50% of raw uWS';
  const { rawUws, whoamiUws } = results;
  if (!rawUws || !whoamiUws) return { target, figure: 'not measured', baseline: '-' };
  const ratio = whoamiUws.requestsPerCpuSecond / rawUws.requestsPerCpuSecond;
  return {
    target,
    figure: `${Math.round(whoamiUws.requestsPerCpuSecond).toLocaleString('en-US')} req/CPU-s = ${percent(ratio)}`,
    baseline: `raw uWS ${Math.round(rawUws.requestsPerCpuSecond).toLocaleString('en-US')} req/CPU-s`,
    met: ratio >= 0.5,
  };
}

function push(results: Results): TargetRow[] {
  const lanes = [
    ['PGlite', results.servicePush],
    ['PostgreSQL', results.servicePushPostgres],
  ] as const;
  return lanes.map(([driver, samples]) => {
    const target = `1. write-to-push p99, fan-out 1, 1,000 sockets <= 3x raw emit (${driver})`;
    const service = summarize(samples.fromStart);
    const baseline = summarize(results.baselinePush.fromStart);
    if (!service || !baseline) return { target, figure: 'not measured', baseline: '-' };
    const ratio = service.p99 / baseline.p99;
    return {
      target,
      figure: `${ms(service.p99)} = ${times(ratio)}`,
      baseline: `raw socket.io emit ${ms(baseline.p99)}`,
      met: ratio <= 3,
    };
  });
}

/** The service's figure and a floor's, p99 of `samples`, per driver. */
function fanOut(
  figures: readonly FanOutFigure[],
  floorPath: (figure: FanOutFigure) => boolean,
  samples: 'all' | 'last',
  target: (driver: string) => string,
  limit: number,
  floorName: string,
  /** More for the baseline column, from the service's figure and its p99. */
  more: (service: FanOutFigure, p99: number) => string = () => '',
): TargetRow[] {
  const rows: TargetRow[] = [];
  for (const service of figures.filter((f) => f.path === 'service')) {
    const own = summarize(service.samples[samples]);
    const floorFigure = figures.find((f) => f.driver === service.driver && floorPath(f));
    const floor = floorFigure ? summarize(floorFigure.samples[samples]) : undefined;
    const name = target(driverName(service.driver));
    if (!own || !floor) {
      rows.push({ target: name, figure: 'not measured', baseline: '-' });
      continue;
    }
    const ratio = own.p99 / floor.p99;
    rows.push({
      target: name,
      figure: `${ms(own.p99)} = ${times(ratio)}`,
      baseline: `${floorName} ${ms(floor.p99)}${more(service, own.p99)}`,
      met: ratio <= limit,
    });
  }
  return rows;
}

function chat(results: Results): TargetRow[] {
  const rows = fanOut(
    results.chat,
    (f) => f.path !== 'service',
    'all',
    (driver) => `2a. message fan-out to 10 members p99 <= 3x bare room emit (${driver})`,
    3,
    'bare room emit',
  );
  return rows.length > 0
    ? rows
    : [{ target: '2a. message fan-out to 10 members', figure: 'not measured', baseline: '-' }];
}

/**
 * The floor emits the listing.posted a watcher received, per socket: the same bytes to carry and
 * parse. The tiny event's figure stays beside it (the row's baseline until 0.53.4).
 */
function watchers(results: Results): TargetRow[] {
  const perSocket: FanOutPath = "bare socket.io emit per socket, the service's event";
  const tiny: FanOutPath = 'bare socket.io emit per socket';
  const rows = fanOut(
    results.storeWatches,
    (f) => f.path === perSocket,
    'last',
    (driver) => `2b. listing.posted to 1,000 watchers p99 <= 2x bare emits (${driver})`,
    2,
    'bare per-socket emits of the event',
    (service, own) => {
      const floor = results.storeWatches.find(
        (f) => f.driver === service.driver && f.path === tiny,
      );
      const small = floor && summarize(floor.samples.last);
      const tinyFloor = small
        ? `; of a tiny event ${ms(small.p99)} (${times(own / small.p99)})`
        : '';
      // What is left once each post's wait for its bytes to be durable is taken out (report.ts).
      const less = summarize(service.samples.lastLessDurable ?? []);
      const event = summarize(
        results.storeWatches.find((f) => f.driver === service.driver && f.path === perSocket)
          ?.samples.last ?? [],
      );
      const lessDurable =
        less && event
          ? `; less the durable put ${ms(less.p99)} (${times(less.p99 / event.p99)})`
          : '';
      return tinyFloor + lessDurable;
    },
  );
  return rows.length > 0
    ? rows
    : [{ target: '2b. listing.posted to 1,000 watchers', figure: 'not measured', baseline: '-' }];
}

function store(results: Results): TargetRow[] {
  if (results.storeQueries.length === 0) {
    return [{ target: '7. the store at 100,000 listings', figure: 'not measured', baseline: '-' }];
  }
  return results.storeQueries.map((figure) => ({
    target: `7. ${figure.query} (${driverName(figure.driver)}) p95 < ${figure.limitMs} ms`,
    figure:
      figure.failures > 0
        ? `${figure.failures} of ${figure.count} failed`
        : `p95 ${figure.p95Ms.toFixed(1)} ms`,
    baseline: `p50 ${figure.p50Ms.toFixed(1)} ms, p99 ${figure.p99Ms.toFixed(1)} ms`,
    met: figure.failures === 0 && figure.p95Ms < figure.limitMs,
  }));
}

function reputation(results: Results): TargetRow[] {
  const rows: TargetRow[] = [];
  for (const figure of results.reputation.filter((f) => f.lane === 'GET /agents/<id>/reputation')) {
    const health = results.reputation.find(
      (f) => f.driver === figure.driver && f.lane === 'GET /health (baseline)',
    );
    const target = `4. GET /agents/<id>/reputation p99 <= 2x GET /health p99, 10,000 deals (${driverName(figure.driver)})`;
    if (!health) {
      rows.push({ target, figure: `p99 ${figure.p99Ms.toFixed(1)} ms`, baseline: '-' });
      continue;
    }
    const ratio = figure.p99Ms / health.p99Ms;
    rows.push({
      target,
      figure: `p99 ${figure.p99Ms.toFixed(1)} ms = ${times(ratio)}`,
      baseline: `GET /health p99 ${health.p99Ms.toFixed(1)} ms`,
      met: figure.failures === 0 && health.failures === 0 && ratio <= 2,
    });
  }
  return rows.length > 0
    ? rows
    : [{ target: '4. reputation at 10,000 deals', figure: 'not measured', baseline: '-' }];
}

function puts(results: Results): TargetRow[] {
  const rows: TargetRow[] = [];
  for (const [bytes, name, limit] of [
    [1024 * 1024, '3a. 1 MiB PUT >= 60% of the durable sink (sha256 + fsync)', 0.6],
    [100 * 1024 * 1024, '3b. 100 MiB PUT >= 90% of the durable sink (sha256 + fsync)', 0.9],
  ] as const) {
    const find = (path: string) =>
      results.files?.figures.find((f) => f.path === path && f.bytes === bytes);
    const service = find('service PUT (uWS)');
    const sink = find(DURABLE_SINK);
    if (!service || !sink) {
      rows.push({ target: name, figure: 'not measured', baseline: '-' });
      continue;
    }
    const ratio = service.medianMbPerSecond / sink.medianMbPerSecond;
    // The blob store alone (no database) says how much of the gap is the store's own promises.
    const floor = find(STORE_SINK);
    rows.push({
      target: name,
      figure: `${service.medianMbPerSecond.toFixed(0)} MB/s = ${percent(ratio)}`,
      baseline:
        `durable sink ${sink.medianMbPerSecond.toFixed(0)} MB/s` +
        (floor
          ? `; blob store alone ${floor.medianMbPerSecond.toFixed(0)} MB/s = ${percent(floor.medianMbPerSecond / sink.medianMbPerSecond)}`
          : ''),
      met: ratio >= limit,
    });
  }
  return rows;
}

function memory(results: Results): TargetRow[] {
  const idle = results.idleRss;
  const row = (target: string, value: number | undefined, limit: number, baseline = '-') =>
    value === undefined
      ? { target, figure: 'not measured', baseline }
      : { target, figure: mb(value), baseline, met: value < limit };
  return [
    row('5a. RSS right after a first start on PGlite < 300 MB', idle?.freshMb, 300),
    row('5b. RSS right after a restart < 250 MB', idle?.restartMb, 250),
    row(
      '5c. 10,000 idle sockets add < 100 MB',
      idle?.idleSocketsMb,
      100,
      idle?.bareSocketsMb === undefined ? '-' : `bare socket.io on uWS ${mb(idle.bareSocketsMb)}`,
    ),
    row('5d. 100,000 resident agents add < 300 MB', idle?.residentAgentsMb, 300),
    {
      ...row(
        '8. /health p99 while 10,000 connect < 200 ms',
        undefined,
        200,
        idle?.bareHealthWhileConnectingP99Ms === undefined
          ? '-'
          : `bare socket.io on uWS ${ms(idle.bareHealthWhileConnectingP99Ms)}`,
      ),
      ...(idle?.healthWhileConnectingP99Ms !== undefined && {
        figure: ms(idle.healthWhileConnectingP99Ms),
        met: idle.healthWhileConnectingP99Ms < 200,
      }),
    },
  ];
}

/** The table of every target, last in the bench's output: issue 36's 1-6, then those kept. */
export function targetsTable(results: Results): string[] {
  const rows = [
    ...push(results),
    ...chat(results),
    ...watchers(results),
    ...puts(results),
    ...reputation(results),
    ...memory(results).slice(0, 4),
    whoami(results),
    ...store(results),
    ...memory(results).slice(4),
  ];
  const verdict = (met: boolean | undefined) =>
    met === undefined ? 'not measured' : met ? 'met' : 'NOT met';
  return [
    '',
    'Targets (issue 36; 7 and 8 kept from issue 22), each beside its baseline from this run:',
    table([
      ['target', 'figure', 'baseline (same run)', 'verdict'],
      ...rows.map((row) => [row.target, row.figure, row.baseline, verdict(row.met)]),
    ]),
  ];
}
