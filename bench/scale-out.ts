/**
 * Scale-out on one PostgreSQL (issue 24): real service processes (test/helpers/service-process.ts)
 * on a database of their own, clients talking to each process directly (no proxy).
 *
 * (a) Throughput of a mixed loop (GET /whoami, a 1 KiB file PUT, a message, GET /changes) with
 *     1, 2 and 3 processes, a fixed number of loops in flight spread evenly over them, and the
 *     CPU seconds each service process, PostgreSQL's backends of the database and this load
 *     generator used over the window, to say which resource saturated.
 * (b) Push latency, POST start -> `change` on a socket: one write on process A, timed at a
 *     socket of the same agent on A (same-process) and on B (cross-process, through B's LISTEN).
 * (c) PostgreSQL connections per process at rest and under load (pg_stat_activity, each
 *     backend given to its process by its client port).
 * (d) The baseline: two raw socket.io servers joined by @socket.io/postgres-adapter on the same
 *     database (socketio-pg-adapter.ts), same-process and cross-process from one emit.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { migrate } from '../storage/migrate.ts';
import { openPostgres } from '../storage/postgres/driver.ts';
import { connectionsByProcess, isListenConnection } from '../test/helpers/postgres-connections.ts';
import { startServiceProcess, type ServiceProcess } from '../test/helpers/service-process.ts';
import { bounded, closeAll, connectMany, type PushClient } from './clients.ts';
import { measureAdapterPush, type AdapterPushSamples } from './socketio-pg-adapter.ts';
import { ms, summarize, table } from './stats.ts';

/** Loops in flight (one agent each), spread evenly over the processes. */
const LOOPS = 24;
const WARM_UP_MS = 1_000;
const WINDOW_MS = (Number(process.env.BENCH_SCALE_SECONDS) || 8) * 1000;
const PROCESSES = [1, 2, 3] as const;
const PUSH_ROUNDS = 300;
const LOST_AFTER_MS = 5_000;
const FILE = new Uint8Array(1024).fill(0x61);
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these. */
const CLOCK_TICKS_PER_SECOND = 100;

export interface ThroughputFigure {
  processes: number;
  loops: number;
  requests: number;
  failures: number;
  firstError?: string;
  seconds: number;
  /** CPU seconds over the window: each service process, PostgreSQL's backends, the generator. */
  serviceCpu: number[];
  postgresCpu: number;
  generatorCpu: number;
  /** Most connections each process held at one sample during the window. */
  connectionsUnderLoad: number[];
}

export interface ScaleOutResults {
  throughput: ThroughputFigure[];
  /** Connections per process at rest (all 3 up, idle), and LISTEN connections among them. */
  connectionsAtRest: { total: number; listen: number }[];
  servicePush: { sameProcess: number[]; crossProcess: number[]; lost: number };
  adapterPush: AdapterPushSamples;
  notes: string[];
}

export function emptyScaleOut(): ScaleOutResults {
  return {
    throughput: [],
    connectionsAtRest: [],
    servicePush: { sameProcess: [], crossProcess: [], lost: 0 },
    adapterPush: { sameProcess: [], crossProcess: [], raw: [], lost: 0 },
    notes: [],
  };
}

/** Why the section cannot run, or null. */
export function scaleOutSkipReason(databaseUrl: string | undefined): string | null {
  return databaseUrl ? null : 'neither BENCH_DATABASE_URL nor DATABASE_URL is set';
}

/** utime + stime of a process, in seconds; 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** A database of its own beside the bench's (`<name>_scale_<pid>`), migrated; dropped by `drop`. */
async function ownDatabase(serverUrl: string) {
  const base = new URL(serverUrl);
  const name = `${decodeURIComponent(base.pathname.slice(1)) || 'bench'}_scale_${process.pid}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const driver = await openPostgres(url.toString(), { max: 1 });
  try {
    await migrate(driver);
  } finally {
    await driver.close();
  }
  return {
    url: url.toString(),
    name,
    admin,
    async drop() {
      await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => undefined);
      await admin.end({ timeout: 5 });
    },
  };
}

interface BenchAgent {
  token: string;
  workspace: string;
}

async function request(url: string, init: RequestInit, expected: number): Promise<unknown> {
  const response = await fetch(url, init);
  const text = await response.text();
  if (response.status !== expected) throw new Error(`${url} answered ${response.status}: ${text}`);
  return text ? (JSON.parse(text) as unknown) : null;
}

async function makeAgent(base: string, i: number): Promise<BenchAgent> {
  const json = { 'content-type': 'application/json' };
  const agent = (await request(
    `${base}/agents`,
    { method: 'POST', headers: json, body: JSON.stringify({ name: `scale ${i}` }) },
    201,
  )) as { api_token: string };
  const auth = { authorization: `Bearer ${agent.api_token}` };
  const workspace = (await request(
    `${base}/workspaces`,
    { method: 'POST', headers: { ...json, ...auth }, body: JSON.stringify({ name: `scale ${i}` }) },
    201,
  )) as { workspace_id: string };
  return { token: agent.api_token, workspace: workspace.workspace_id };
}

/** One loop of the mixed workload: 4 requests. */
async function mixedLoop(base: string, agent: BenchAgent, turn: number): Promise<void> {
  const auth = { authorization: `Bearer ${agent.token}` };
  await request(`${base}/whoami`, { headers: auth }, 200);
  await request(
    `${base}/workspaces/${agent.workspace}/files/bench/f${turn % 8}.bin`,
    { method: 'PUT', headers: auth, body: FILE },
    201,
  );
  await request(
    `${base}/workspaces/${agent.workspace}/messages`,
    {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ text: `loop ${turn}` }),
    },
    201,
  );
  await request(`${base}/changes?limit=100`, { headers: auth }, 200);
}

async function backendPids(sql: postgres.Sql, database: string): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`;
  return rows.map((row) => row.pid);
}

async function measureThroughput(
  processes: readonly ServiceProcess[],
  agents: readonly BenchAgent[],
  database: { url: string; name: string; admin: postgres.Sql },
  signal: AbortSignal,
): Promise<ThroughputFigure> {
  const figure: ThroughputFigure = {
    processes: processes.length,
    loops: agents.length,
    requests: 0,
    failures: 0,
    seconds: 0,
    serviceCpu: [],
    postgresCpu: 0,
    generatorCpu: 0,
    connectionsUnderLoad: processes.map(() => 0),
  };
  let counting = false;
  let running = true;
  const lane = async (i: number) => {
    const base = (processes[i % processes.length] as ServiceProcess).baseUrl;
    const agent = agents[i] as BenchAgent;
    for (let turn = 0; running && !signal.aborted; turn++) {
      try {
        await mixedLoop(base, agent, turn);
        if (counting) figure.requests += 4;
      } catch (error) {
        if (counting) figure.failures++;
        figure.firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  const lanes = Promise.all(agents.map((_, i) => lane(i)));
  try {
    await new Promise((resolve) => setTimeout(resolve, WARM_UP_MS));
    const backends = new Map<number, number>();
    for (const pid of await backendPids(database.admin, database.name)) {
      backends.set(pid, cpuSeconds(pid));
    }
    const serviceBefore = processes.map((p) => cpuSeconds(p.pid));
    const generatorBefore = process.cpuUsage();
    const started = performance.now();
    counting = true;
    // Connections under load: sampled twice a second, the most each process held.
    const sampler = (async () => {
      while (counting) {
        const seen = await connectionsByProcess(
          database.admin,
          database.url,
          processes.map((p) => p.pid),
        );
        processes.forEach((p, i) => {
          const held = seen.byProcess.get(p.pid)?.length ?? 0;
          figure.connectionsUnderLoad[i] = Math.max(figure.connectionsUnderLoad[i] ?? 0, held);
        });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    counting = false;
    figure.seconds = (performance.now() - started) / 1000;
    const generator = process.cpuUsage(generatorBefore);
    figure.generatorCpu = (generator.user + generator.system) / 1e6;
    figure.serviceCpu = processes.map((p, i) => cpuSeconds(p.pid) - (serviceBefore[i] ?? 0));
    for (const pid of await backendPids(database.admin, database.name)) {
      figure.postgresCpu += cpuSeconds(pid) - (backends.get(pid) ?? 0);
    }
    await sampler;
  } finally {
    running = false;
    await lanes;
  }
  return figure;
}

/** Sockets of one agent on A and on B; writes on A, each timed at both sockets. */
async function measureServicePush(
  a: ServiceProcess,
  b: ServiceProcess,
  samples: ScaleOutResults['servicePush'],
  signal: AbortSignal,
): Promise<void> {
  const agent = await makeAgent(a.baseUrl, -1);
  let clients: PushClient[] = [];
  try {
    clients = [
      ...(await connectMany(a.baseUrl, [agent.token], 1, true)),
      ...(await connectMany(b.baseUrl, [agent.token], 1, true)),
    ];
    const post = async () =>
      (
        (await request(
          `${a.baseUrl}/feedback`,
          {
            method: 'POST',
            headers: {
              authorization: `Bearer ${agent.token}`,
              'content-type': 'application/json',
            },
            body: JSON.stringify({ message: 'bench: scale-out push', category: 'other' }),
          },
          202,
        )) as { feedback_id: string }
      ).feedback_id;
    for (let i = 0; i < 20; i++) {
      const id = await post();
      await Promise.all(clients.map((client) => client.arrival(id, LOST_AFTER_MS)));
    }
    for (let i = 0; i < PUSH_ROUNDS && !signal.aborted; i++) {
      const start = performance.now();
      const id = await post();
      const [same, cross] = await Promise.all(
        clients.map((client) => client.arrival(id, LOST_AFTER_MS)),
      );
      if (same == null || cross == null) samples.lost++;
      if (same != null) samples.sameProcess.push(same - start);
      if (cross != null) samples.crossProcess.push(cross - start);
    }
  } finally {
    closeAll(clients);
  }
}

/** Runs (a) to (d), filling `results` as it goes; every process it starts is stopped. */
export async function measureScaleOut(
  serverUrl: string,
  results: ScaleOutResults,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const database = await ownDatabase(serverUrl);
  const processes: ServiceProcess[] = [];
  try {
    const env = { DATABASE_URL: database.url, SOCKETS_PER_AGENT: '20' };
    processes.push(await startServiceProcess(env));
    const first = processes[0] as ServiceProcess;
    const agents = await bounded(LOOPS, 6, (i) => makeAgent(first.baseUrl, i));
    for (const count of PROCESSES) {
      while (processes.length < count) processes.push(await startServiceProcess(env));
      if (signal.aborted) return;
      const figure = await measureThroughput(processes, agents, database, signal);
      results.throughput.push(figure);
      log(
        `${count} process(es): ${Math.round(figure.requests / figure.seconds)} req/s, ` +
          `${figure.failures} failed loops${figure.firstError ? ` (${figure.firstError})` : ''}`,
      );
    }
    const atRest = await connectionsByProcess(
      database.admin,
      database.url,
      processes.map((p) => p.pid),
    );
    results.connectionsAtRest = processes.map((p) => {
      const held = atRest.byProcess.get(p.pid) ?? [];
      return { total: held.length, listen: held.filter(isListenConnection).length };
    });
    const [a, b] = processes as [ServiceProcess, ServiceProcess];
    log('push latency, same-process and cross-process...');
    await measureServicePush(a, b, results.servicePush, signal);
    log('socket.io PostgreSQL adapter baseline...');
    await measureAdapterPush(database.url, PUSH_ROUNDS, results.adapterPush, signal);
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    await database.drop();
  }
}

const seconds = (value: number) => `${value.toFixed(2)} s`;

/** The section's figures, each beside its baseline, as lines for the report. */
export function scaleOutLines(results: ScaleOutResults): string[] {
  const lines = [
    `Scale-out on one PostgreSQL (bench/scale-out.ts): ${LOOPS} closed loops (one agent each, spread`,
    'evenly over the processes, straight to each, no proxy) of GET /whoami, PUT a 1 KiB file,',
    `POST a message, GET /changes; ${WINDOW_MS / 1000} s after ${WARM_UP_MS / 1000} s of warm-up. CPU: seconds used over the`,
    "window by each service process, by PostgreSQL's backends of the database (/proc/<pid>/stat)",
    'and by this load generator. Connections: the most each process held at one sample.',
  ];
  if (results.throughput.length > 0) {
    lines.push(
      table([
        [
          'processes',
          'requests/s',
          'failed loops',
          'service CPU (each)',
          'PostgreSQL CPU',
          'generator CPU',
          'connections under load',
        ],
        ...results.throughput.map((f) => [
          String(f.processes),
          String(Math.round(f.requests / f.seconds)),
          String(f.failures),
          f.serviceCpu.map(seconds).join(' + '),
          seconds(f.postgresCpu),
          seconds(f.generatorCpu),
          f.connectionsUnderLoad.join(' / '),
        ]),
      ]),
    );
    for (const f of results.throughput) {
      const used = [
        ...f.serviceCpu.map((cpu, i) => [`service process ${i + 1}`, cpu] as const),
        ['PostgreSQL', f.postgresCpu] as const,
        ['load generator', f.generatorCpu] as const,
      ];
      const total = used.reduce((sum, [, cpu]) => sum + cpu, 0);
      const [busiest, most] = used.reduce((top, next) => (next[1] > top[1] ? next : top));
      lines.push(
        `${f.processes} process(es): ${seconds(total)} of CPU in ${seconds(f.seconds)} on 2 cores ` +
          `(${Math.round((100 * total) / (2 * f.seconds))}% of the machine); the busiest: ${busiest}, ` +
          `${Math.round((100 * most) / f.seconds)}% of a core`,
      );
    }
  } else lines.push('(no throughput figures)');
  if (results.connectionsAtRest.length > 0) {
    lines.push(
      `Connections at rest per process: ${results.connectionsAtRest
        .map((c, i) => `process ${i + 1}: ${c.total} (${c.listen} LISTEN)`)
        .join('; ')}`,
    );
  }
  const rows: string[][] = [];
  const row = (name: string, samples: number[], lost: number) => {
    const s = summarize(samples);
    rows.push([name, String(s?.count ?? 0), ms(s?.p50), ms(s?.p99), ms(s?.max), String(lost)]);
  };
  const service = results.servicePush;
  const adapter = results.adapterPush;
  row('service, same process (write on A, socket on A)', service.sameProcess, service.lost);
  row('service, cross-process (write on A, socket on B)', service.crossProcess, service.lost);
  row('raw socket.io, same process (no adapter)', adapter.raw, adapter.lost);
  row('socket.io + postgres-adapter, same process', adapter.sameProcess, adapter.lost);
  row('socket.io + postgres-adapter, cross-process', adapter.crossProcess, adapter.lost);
  lines.push(
    '',
    'Push latency, POST sent -> `change` on the socket; one write, timed at both sockets (same agent),',
    'one after another with the processes otherwise idle. The baseline: two raw socket.io servers',
    'joined by @socket.io/postgres-adapter 0.5.0 on the same database, one emit to both sockets,',
    'taking turns with a plain socket.io server emitting to its own socket (each server a process).',
    table([['path', 'n', 'p50', 'p99', 'max', 'lost'], ...rows]),
  );
  const p99 = (samples: number[]) => summarize(samples)?.p99;
  const p50 = (samples: number[]) => summarize(samples)?.p50;
  const [sameP99, crossP99] = [p99(service.sameProcess), p99(service.crossProcess)];
  const [rawP99, adapterCross] = [p99(adapter.raw), p99(adapter.crossProcess)];
  if (sameP99 !== undefined && crossP99 !== undefined) {
    const added = crossP99 - sameP99;
    lines.push(
      `Cross-process push p99 ${ms(crossP99)} vs same-process ${ms(sameP99)}: ${ms(added)} added ` +
        `(p50 ${ms((p50(service.crossProcess) ?? 0) - (p50(service.sameProcess) ?? 0))}); ` +
        `target within 2 ms: ${added <= 2 ? 'met' : 'not met'}` +
        (rawP99 !== undefined && adapterCross !== undefined
          ? `; the adapter's cross-process emit adds ${ms(adapterCross - rawP99)} at p99 to a plain ` +
            `socket.io emit (p50 ${ms((p50(adapter.crossProcess) ?? 0) - (p50(adapter.raw) ?? 0))}), ` +
            `and its same-process emit ${ms((p99(adapter.sameProcess) ?? 0) - rawP99)} (it awaits its ` +
            'NOTIFY before delivering locally)'
          : '; no adapter baseline measured'),
    );
  }
  lines.push(...results.notes);
  return lines;
}
