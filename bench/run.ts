/**
 * `npm run bench`: whoami throughput and write-to-push latency, each beside a baseline measured
 * in the same run on the same machine. It prints figures and never fails: a run that breaks or
 * overruns prints what it has and exits 0.
 */
import { execSync } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { closeTestResources } from '../test/helpers/resources.ts';
import { startTestServer } from '../test/helpers/server.ts';
import { startRawSocketIo } from './baselines.ts';
import { closeAll, connectMany, signUpMany, type PushClient } from './clients.ts';
import type { LoadResult } from './load.ts';
import {
  emitPoster,
  emptySamples,
  feedbackPoster,
  timeLongPolls,
  timeSocketPushes,
  type PushSamples,
} from './push-latency.ts';
import { ms, perSecond, summarize, table } from './stats.ts';
import { measureRawUws, measureWhoami } from './whoami.ts';

const OVERALL_LIMIT_MS = 5 * 60_000;
/** BENCH_CLIENTS lowers the socket count on a machine that cannot hold 1,000 (2 fds each). */
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 1000);
const SET_UP_CONCURRENCY = 20;
const SOCKET_WRITES = 500;
const LONG_POLL_WRITES = 200;

const results = {
  rawUws: undefined as LoadResult | undefined,
  whoamiUws: undefined as LoadResult | undefined,
  whoamiNode: undefined as LoadResult | undefined,
  serviceClients: 0,
  baselineClients: 0,
  servicePush: emptySamples(),
  baselinePush: emptySamples(),
  longPoll: emptySamples(),
  notes: [] as string[],
  /** 1-minute load average before and after: above ~1 on 2 cores, something else competed. */
  loadBefore: loadavg()[0] ?? 0,
};

const stop = new AbortController();
const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);

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
    log(`${name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
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
    results.whoamiUws = await measureWhoami('uws', stop.signal);
  });
  await section('GET /whoami on node:http', async () => {
    results.whoamiNode = await measureWhoami('node', stop.signal);
  });
}

async function servicePushes(): Promise<void> {
  const server = await startTestServer({ httpEngine: 'uws' });
  let clients: PushClient[] = [];
  try {
    let started = performance.now();
    const tokens = await signUpMany(server, CLIENTS, SET_UP_CONCURRENCY);
    log(
      `signed up ${tokens.length} agents in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    started = performance.now();
    clients = await connectMany(server.baseUrl, tokens, SET_UP_CONCURRENCY, true);
    results.serviceClients = clients.length;
    log(
      `connected ${clients.length} sockets in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const [sender] = clients;
    const [token] = tokens;
    if (!sender || !token) throw new Error('no clients connected');
    await timeSocketPushes(
      sender,
      feedbackPoster(server, token),
      SOCKET_WRITES,
      results.servicePush,
    );
    // The sockets stay connected: the long-poll is measured under the same load.
    const waiter = await server.signUp('bench long-poll');
    await timeLongPolls(server, waiter.api_token, LONG_POLL_WRITES, results.longPoll);
  } finally {
    closeAll(clients);
    await server.close();
  }
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

function report(): void {
  const { rawUws, whoamiUws, whoamiNode } = results;
  const lines = [
    '',
    `Throughput: autocannon in a child process (its own core; the server runs in this process),`,
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
  if (results.notes.length > 0) lines.push('', 'Notes:', ...results.notes.map((n) => `- ${n}`));
  process.stdout.write(`${lines.join('\n')}\n`);
}

const overall = setTimeout(() => {
  results.notes.push(
    `stopped by the ${OVERALL_LIMIT_MS / 60_000}-minute overall limit; figures are partial`,
  );
  stop.abort();
  report();
  process.exit(0);
}, OVERALL_LIMIT_MS);

log(
  `node ${process.version}, ${availableParallelism()} cores, ulimit -n ${fdLimit()}, ${CLIENTS} clients`,
);
// The baseline goes first: attaching socket.io to uWS patches socket.io's Adapter prototype for
// the whole process, and the service's close() never calls io.close(), which would restore it.
// After that, a node:http socket.io server here crashes on its first connection.
await section(`write-to-push, raw socket.io baseline, ${CLIENTS} sockets`, baselinePushes);
await throughput();
await section(`write-to-push, service, ${CLIENTS} sockets`, servicePushes);
await closeTestResources();
clearTimeout(overall);
report();
// PGlite workers and uWS can outlive their close by a moment; the bench is done, so leave now.
process.exit(0);
