import { LOAD_GENERATOR } from './load.ts';
import { availableParallelism, loadavg } from 'node:os';
import type { LoadResult } from './load.ts';
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
    notes: [] as string[],
    /** What the servers logged as internal errors (first lines only). */
    serverLog: [] as string[],
    /** 1-minute load average before and after: above ~1 on 2 cores, something else competed. */
    loadBefore: loadavg()[0] ?? 0,
  };
}

export type Results = ReturnType<typeof emptyResults>;

function loadRow(name: string, result: LoadResult | undefined): string[] {
  return [
    name,
    perSecond(result?.requestsPerSecond),
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

/** The closing table: each figure beside its baseline. */
export function report(results: Results): void {
  const { rawUws, whoamiUws, whoamiNode } = results;
  const lines = [
    '',
    `Throughput: ${LOAD_GENERATOR} in a child process (its own core; the server runs in this process, node ${process.execArgv.join(' ') || '(no flags)'}),`,
    `10 connections, pipelining 1, 5 s after a 1 s warm-up, loopback, port 0. ${availableParallelism()} cores.`,
    table([
      ['target', 'requests/s', 'p50', 'p99', 'server CPU', 'non-2xx/errors'],
      loadRow('raw uWS hello world (baseline)', rawUws),
      loadRow('GET /whoami, uWS engine', whoamiUws),
      loadRow('GET /whoami, node:http engine', whoamiNode),
    ]),
  ];
  if (rawUws && whoamiUws) {
    const ratio = whoamiUws.requestsPerSecond / rawUws.requestsPerSecond;
    const verdict = ratio >= 0.5 ? 'met' : 'NOT met';
    lines.push(`whoami (uWS) / raw uWS = ${(ratio * 100).toFixed(1)}% (target >= 50%: ${verdict})`);
  }
  if (rawUws && whoamiUws) {
    // Requests per second of server CPU: what each costs, whatever the generator could drive.
    const perCpu = (r: LoadResult) => r.requestsPerSecond / (r.serverCpuPercent / 100);
    lines.push(
      `per CPU-second: raw uWS ${perSecond(perCpu(rawUws))}, whoami (uWS) ${perSecond(perCpu(whoamiUws))} = ${((perCpu(whoamiUws) / perCpu(rawUws)) * 100).toFixed(1)}%`,
    );
  }
  if (rawUws && rawUws.serverCpuPercent < 90) {
    lines.push(
      `raw uWS used ${Math.round(rawUws.serverCpuPercent)}% of a core: the load generator, not uWS, was the limit,`,
      'so the raw figure is what this generator can drive, a floor for uWS itself.',
    );
  }
  if (rawUws && whoamiNode) {
    const ratio = whoamiNode.requestsPerSecond / rawUws.requestsPerSecond;
    lines.push(`whoami (node:http) / raw uWS = ${(ratio * 100).toFixed(1)}%`);
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
  );
  const loadAfter = (loadavg()[0] ?? 0).toFixed(2);
  lines.push(
    '',
    `1-minute load average: ${results.loadBefore.toFixed(2)} before, ${loadAfter} after.`,
  );
  if (results.serverLog.length > 0) {
    lines.push('', 'Server error log:', ...results.serverLog.map((line) => `- ${line}`));
  }
  if (results.notes.length > 0) lines.push('', 'Notes:', ...results.notes.map((n) => `- ${n}`));
  process.stdout.write(`${lines.join('\n')}\n`);
}
