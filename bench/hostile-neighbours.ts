/**
 * Another agent's small PUT beside hostile neighbours (issue 32). One victim saves small
 * markdown files one after another for PHASE_MS in each case: alone (the baseline, measured in
 * the same run on the same server), then beside each attack in turn: an agent saving files whose
 * YAML header is an alias bomb; an agent whose webhook receiver answers 200 and then streams for
 * ever (test_webhook back to back); 10 agents each holding a slow index query (one after
 * another, each a few hundred ms of CPU); one agent sending heavy index queries that run into
 * the time limit. On PGlite and, with BENCH_DATABASE_URL or DATABASE_URL, on PostgreSQL. It
 * measures whatever the code does when run, prints the victim's p50/p90 beside the baseline's,
 * and never fails a run.
 *
 * `npx tsx bench/hostile-neighbours.ts` alone, or `BENCH_ONLY=hostile-neighbours npm run bench`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startService, type RunningService } from '../server/app.ts';
import { configFromEnv, type Config } from '../server/config.ts';
import type { Driver } from '../storage/driver.ts';
import { migrate } from '../storage/migrate.ts';
import { openPglite } from '../storage/pglite/driver.ts';
import { openPostgres } from '../storage/postgres/driver.ts';
import { freshPgliteDir } from '../test/helpers/storage.ts';
import { benchDatabaseUrl, scratchDatabase } from './scratch-database.ts';
import { ms, summarize, table, type LatencySummary } from './stats.ts';

/** stats.ts's summary plus p90 (nearest rank, as there): the figure the issue compares. */
type Summary = LatencySummary & { p90: number };
function summarizeP90(samplesMs: readonly number[]): Summary | null {
  const summary = summarize(samplesMs);
  if (!summary) return null;
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const p90 = sorted[Math.min(sorted.length - 1, Math.ceil(0.9 * sorted.length) - 1)] ?? 0;
  return { ...summary, p90 };
}

/** How long each case runs (BENCH_HOSTILE_S). */
const PHASE_MS = (Number(process.env.BENCH_HOSTILE_S) || 6) * 1000;
const SLOW_QUERY_AGENTS = 10;

/** A YAML header of nine nested aliases, each nine times the last (billion laughs). */
const ALIAS_BOMB = (() => {
  const lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 9; i++) {
    lines.push(
      `a${i}: &a${i} [${Array<string>(9)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  }
  return `---\n${lines.join('\n')}\n---\nboom\n`;
})();

/** A cross join counted: a few hundred ms of CPU, inside the time limit. */
const SLOW_QUERY = {
  sql: 'select count(*) from unnest($1::int[]) a, unnest($1::int[]) b',
  // Under the 10,000-character limit of one parameter.
  params: [`{${Array.from({ length: 1800 }, (_, i) => i).join(',')}}`],
};
/** Far past any time limit: three 2,000-element arrays joined. */
const HEAVY_QUERY = {
  sql: 'select count(*) from unnest($1::int[]) a, unnest($1::int[]) b, unnest($1::int[]) c',
  params: [`{${Array.from({ length: 2000 }, (_, i) => i).join(',')}}`],
};

type Attack =
  | 'alone'
  | 'yaml alias bomb'
  | 'webhook streams for ever'
  | 'slow index SQL x10'
  | 'heavy index SQL';
const ATTACKS: Attack[] = [
  'alone',
  'yaml alias bomb',
  'webhook streams for ever',
  'slow index SQL x10',
  'heavy index SQL',
];

export interface HostileFigure {
  driver: 'pglite' | 'postgres';
  attack: Attack;
  puts: Summary | null;
  failures: number;
  /** What the attack achieved: its answers by status, or bytes pushed at the service. */
  attacker: string;
}

async function call(
  service: RunningService,
  method: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: {
      ...(typeof body === 'string' ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Not JSON: the status is what counts.
  }
  return { status: response.status, body: parsed };
}

async function agentWithWorkspace(service: RunningService, name: string) {
  const signUp = await call(service, 'POST', '/agents', { name: `${name} ${Math.random()}` });
  if (signUp.status !== 201) throw new Error(`sign-up failed: ${signUp.status}`);
  const token = signUp.body.api_token as string;
  const workspace = await call(service, 'POST', '/workspaces', { visibility: 'private' }, token);
  return { token, workspaceId: workspace.body.workspace_id as string };
}

/** A receiver on loopback that answers 200 and streams as fast as the socket takes it. */
async function startStreamingReceiver(): Promise<{
  url: string;
  pushed: () => number;
  close(): Promise<void>;
}> {
  let pushed = 0;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const server: Server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    const pump = () => {
      while (!response.destroyed) {
        pushed += chunk.length;
        if (!response.write(chunk)) return;
      }
    };
    response.on('drain', pump);
    response.on('error', () => undefined);
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    pushed: () => pushed,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const count = (answers: Map<number, number>) =>
  [...answers]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status}: ${n}`)
    .join(', ') || '-';

/** One attack's loop until `running()` is false; resolves with what it achieved. */
async function attack(
  service: RunningService,
  kind: Attack,
  running: () => boolean,
): Promise<string> {
  const answers = new Map<number, number>();
  const note = (status: number) => answers.set(status, (answers.get(status) ?? 0) + 1);
  if (kind === 'alone') return '-';
  if (kind === 'yaml alias bomb') {
    const { token, workspaceId } = await agentWithWorkspace(service, 'bomber');
    for (let i = 0; running(); i++) {
      note(
        (
          await call(
            service,
            'PUT',
            `/workspaces/${workspaceId}/files/bomb-${i}.md`,
            ALIAS_BOMB,
            token,
          )
        ).status,
      );
    }
    return count(answers);
  }
  if (kind === 'webhook streams for ever') {
    const receiver = await startStreamingReceiver();
    const { token } = await agentWithWorkspace(service, 'streamer');
    try {
      note((await call(service, 'PUT', '/whoami/webhook', { url: receiver.url }, token)).status);
      while (running()) {
        note((await call(service, 'POST', '/whoami/webhook/test', undefined, token)).status);
        await service.services.webhookDelivery.idle();
      }
      await call(service, 'DELETE', '/whoami/webhook', undefined, token);
      // Written into the sockets' kernel buffers, a few MiB per connection the service dropped
      // after reading its first few KiB; not what the service read.
      return `${count(answers)}; receiver wrote ${(receiver.pushed() / 1024 / 1024).toFixed(0)} MiB into sockets`;
    } finally {
      await receiver.close();
    }
  }
  const agents = kind === 'heavy index SQL' ? 1 : SLOW_QUERY_AGENTS;
  const query = kind === 'heavy index SQL' ? HEAVY_QUERY : SLOW_QUERY;
  const tokens = await Promise.all(
    Array.from(
      { length: agents },
      async (_, i) => (await agentWithWorkspace(service, `querier ${i}`)).token,
    ),
  );
  await Promise.all(
    tokens.map(async (token) => {
      while (running()) note((await call(service, 'POST', '/index/sql', query, token)).status);
    }),
  );
  return count(answers);
}

/** The victim's PUTs for PHASE_MS beside `kind`. */
async function runCase(
  service: RunningService,
  kind: Attack,
  signal: AbortSignal,
): Promise<Omit<HostileFigure, 'driver' | 'attack'>> {
  const victim = await agentWithWorkspace(service, 'victim');
  let until = Infinity;
  const running = () => performance.now() < until && !signal.aborted;
  const attacking = attack(service, kind, running);
  // The attack gets a moment to start before the victim is timed.
  await new Promise((resolve) => setTimeout(resolve, kind === 'alone' ? 0 : 300));
  until = performance.now() + PHASE_MS;
  const puts: number[] = [];
  let failures = 0;
  for (let i = 0; running(); i++) {
    const started = performance.now();
    const answer = await call(
      service,
      'PUT',
      `/workspaces/${victim.workspaceId}/files/note-${i}.md`,
      `---\nstage: draft\n---\nNote ${i}.\n`,
      victim.token,
    );
    if (answer.status === 201) puts.push(performance.now() - started);
    else failures++;
  }
  return { puts: summarizeP90(puts), failures, attacker: await attacking };
}

async function openDriver(kind: 'pglite' | 'postgres', databaseUrl: string | undefined) {
  if (kind === 'pglite')
    return { driver: await openPglite(await freshPgliteDir()), drop: async () => undefined };
  const scratch = await scratchDatabase(databaseUrl as string);
  const driver: Driver = await openPostgres(scratch.url);
  await migrate(driver);
  return { driver, drop: () => scratch.drop() };
}

/** Every case on one driver kind, one server; figures go to `record` as they come. */
export async function measureHostileNeighbours(
  kind: 'pglite' | 'postgres',
  databaseUrl: string | undefined,
  signal: AbortSignal,
  record: (figure: HostileFigure) => void,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<void> {
  const { driver, drop } = await openDriver(kind, databaseUrl);
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-bench-'));
  const config: Config = {
    ...configFromEnv({}),
    dataDir,
    port: 0,
    log: serverLog,
    rateLimitPerMinute: 0,
    signUpLimitPerHour: 0,
    // The streaming receiver is on loopback; the attempt's limit stays the default.
    webhookAllowPrivate: true,
  };
  const service = await startService(config, driver);
  try {
    for (const each of ATTACKS) {
      if (signal.aborted) return;
      const figure = { driver: kind, attack: each, ...(await runCase(service, each, signal)) };
      record(figure);
      log(
        `${kind}, ${each}: PUT p50 ${ms(figure.puts?.p50)} p90 ${ms(figure.puts?.p90)}` +
          ` (${figure.puts?.count ?? 0}), attacker ${figure.attacker}`,
      );
    }
  } finally {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
    await drop();
  }
}

/** The figures as a table, each beside its driver's victim-alone baseline. */
export function hostileNeighboursTable(figures: readonly HostileFigure[]): string {
  const alone = (driver: string) =>
    figures.find((f) => f.driver === driver && f.attack === 'alone')?.puts?.p90;
  return table([
    [
      'driver',
      'beside',
      'PUTs',
      'PUT p50',
      'PUT p90',
      'p90 alone',
      'p90 / alone',
      'failed',
      'attacker',
    ],
    ...figures.map((f) => {
      const baseline = alone(f.driver);
      const p90 = f.puts?.p90;
      return [
        f.driver === 'pglite' ? 'PGlite' : 'PostgreSQL',
        f.attack,
        String(f.puts?.count ?? 0),
        ms(f.puts?.p50),
        ms(p90),
        ms(baseline),
        baseline && p90 !== undefined ? `${(p90 / baseline).toFixed(1)}x` : '-',
        String(f.failures),
        f.attacker,
      ];
    }),
  ]);
}

/** Both drivers (PostgreSQL when a URL is set); prints the table; never throws. */
export async function runHostileNeighbours(
  signal: AbortSignal,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<{ figures: HostileFigure[]; notes: string[] }> {
  const figures: HostileFigure[] = [];
  const notes: string[] = [];
  for (const kind of ['pglite', 'postgres'] as const) {
    if (kind === 'postgres' && !benchDatabaseUrl()) {
      notes.push(
        'hostile neighbours on PostgreSQL: skipped, no BENCH_DATABASE_URL or DATABASE_URL',
      );
      continue;
    }
    try {
      await measureHostileNeighbours(
        kind,
        benchDatabaseUrl(),
        signal,
        (f) => figures.push(f),
        log,
        serverLog,
      );
    } catch (error) {
      notes.push(
        `hostile neighbours on ${kind} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  return { figures, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const log = (line: string) => process.stdout.write(`[hostile-neighbours] ${line}\n`);
  const { figures, notes } = await runHostileNeighbours(
    new AbortController().signal,
    log,
    () => undefined,
  );
  process.stdout.write(`${hostileNeighboursTable(figures)}\n${notes.join('\n')}\n`);
  process.exit(0);
}
