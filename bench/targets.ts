import type { FanOutFigure, FanOutPath } from './fan-out.ts';
import type { Results } from './report.ts';
import { ms, summarize, table } from './stats.ts';

/**
 * Issue 22's targets, each figure beside the baseline measured in the same run, and whether it
 * is met: the table the bench ends with. A figure not measured in this run says so.
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
  const target = '1. GET /whoami per server CPU-second >= 50% of raw uWS';
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

function push(results: Results): TargetRow {
  const target = '2a. write-to-push p99 from start, fan-out 1, 1,000 sockets <= 3x raw emit';
  const service = summarize(results.servicePush.fromStart);
  const baseline = summarize(results.baselinePush.fromStart);
  if (!service || !baseline) return { target, figure: 'not measured', baseline: '-' };
  const ratio = service.p99 / baseline.p99;
  return {
    target,
    figure: `${ms(service.p99)} = ${times(ratio)}`,
    baseline: `raw socket.io emit ${ms(baseline.p99)}`,
    met: ratio <= 3,
  };
}

/** The service's figure and a floor's, p99 of `samples`, per driver. */
function fanOut(
  figures: readonly FanOutFigure[],
  floorPath: (figure: FanOutFigure) => boolean,
  samples: 'all' | 'last',
  target: (driver: string) => string,
  limit: number,
  floorName: string,
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
      baseline: `${floorName} ${ms(floor.p99)}`,
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
    (driver) => `2b. message fan-out to 10 members p99 <= 3x bare room emit (${driver})`,
    3,
    'bare room emit',
  );
  return rows.length > 0
    ? rows
    : [{ target: '2b. message fan-out to 10 members', figure: 'not measured', baseline: '-' }];
}

function watchers(results: Results): TargetRow[] {
  const perSocket: FanOutPath = 'bare socket.io emit per socket';
  const rows = fanOut(
    results.storeWatches,
    (f) => f.path === perSocket,
    'last',
    (driver) => `2c. listing.posted to 1,000 watchers p99 <= 2x bare emits (${driver})`,
    2,
    'bare per-socket emits',
  );
  return rows.length > 0
    ? rows
    : [{ target: '2c. listing.posted to 1,000 watchers', figure: 'not measured', baseline: '-' }];
}

function store(results: Results): TargetRow[] {
  if (results.storeQueries.length === 0) {
    return [{ target: '3. the store at 100,000 listings', figure: 'not measured', baseline: '-' }];
  }
  return results.storeQueries.map((figure) => ({
    target: `3. ${figure.query} (${driverName(figure.driver)}) p95 < ${figure.limitMs} ms`,
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
    rows.push({
      target: `4. GET /agents/<id>/reputation p99 < 5 ms, 10,000 deals (${driverName(figure.driver)})`,
      figure: `p99 ${figure.p99Ms.toFixed(1)} ms`,
      baseline: health ? `GET /health p99 ${health.p99Ms.toFixed(1)} ms` : '-',
      met: figure.failures === 0 && figure.p99Ms < 5,
    });
  }
  return rows.length > 0
    ? rows
    : [{ target: '4. reputation at 10,000 deals', figure: 'not measured', baseline: '-' }];
}

function puts(results: Results): TargetRow[] {
  const rows: TargetRow[] = [];
  for (const [bytes, name, limit] of [
    [1024 * 1024, '5a. 1 MiB PUT >= 50% of the raw upload sink', 0.5],
    [100 * 1024 * 1024, '5b. 100 MiB PUT >= 80% of the raw upload sink', 0.8],
  ] as const) {
    const find = (path: string) =>
      results.files?.figures.find((f) => f.path === path && f.bytes === bytes);
    const service = find('service PUT (uWS)');
    const sink = find('raw uWS upload sink PUT (baseline)');
    if (!service || !sink) {
      rows.push({ target: name, figure: 'not measured', baseline: '-' });
      continue;
    }
    const ratio = service.medianMbPerSecond / sink.medianMbPerSecond;
    rows.push({
      target: name,
      figure: `${service.medianMbPerSecond.toFixed(0)} MB/s = ${percent(ratio)}`,
      baseline: `raw sink ${sink.medianMbPerSecond.toFixed(0)} MB/s`,
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
  const resident =
    idle?.residentAgentsMb !== undefined && idle.restartMb !== undefined
      ? idle.restartMb + idle.residentAgentsMb
      : undefined;
  return [
    row('6a. RSS right after a first start < 300 MB', idle?.freshMb, 300),
    row('6b. RSS right after a restart < 200 MB', idle?.restartMb, 200),
    row('6c. RSS with 100,000 resident agents < 500 MB', resident, 500, 'idle + their extra'),
    row('6d. 10,000 idle sockets < 100 MB', idle?.idleSocketsMb, 100),
    {
      ...row('6e. /health p99 while 10,000 connect < 200 ms', undefined, 200),
      ...(idle?.healthWhileConnectingP99Ms !== undefined && {
        figure: ms(idle.healthWhileConnectingP99Ms),
        met: idle.healthWhileConnectingP99Ms < 200,
      }),
    },
  ];
}

/** The table of every target of issue 22, last in the bench's output. */
export function targetsTable(results: Results): string[] {
  const rows = [
    whoami(results),
    push(results),
    ...chat(results),
    ...watchers(results),
    ...store(results),
    ...reputation(results),
    ...puts(results),
    ...memory(results),
  ];
  const verdict = (met: boolean | undefined) =>
    met === undefined ? 'not measured' : met ? 'met' : 'NOT met';
  return [
    '',
    'Targets (issue 22), each beside its baseline from this run:',
    table([
      ['target', 'figure', 'baseline (same run)', 'verdict'],
      ...rows.map((row) => [row.target, row.figure, row.baseline, verdict(row.met)]),
    ]),
  ];
}
