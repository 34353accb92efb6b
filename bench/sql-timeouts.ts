/**
 * Writes while one agent sends only index queries that run past their time limit (issue 17,
 * item 3). One writer saves small markdown files one after another and one poller asks
 * /health, for PHASE_MS in each case: alone; beside an attacker within the timeout budget
 * (the defaults: 3 a minute per agent, 30 for everyone); beside an attacker with no budget, so
 * that every one of its queries runs into the limit; and, on PGlite, the same with the thread
 * stopped at each timeout, as before the in-engine cancel. The attacker sends its next query as
 * soon as the last one is answered, 429s included, but no faster than the default per-address
 * rate limit would let it (that limit is off here, since the writer shares the address).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, type RunningService } from '../server/app.ts';
import { configFromEnv, type Config } from '../server/config.ts';
import type { Driver } from '../storage/driver.ts';
import { migrate } from '../storage/migrate.ts';
import { openPglite } from '../storage/pglite/driver.ts';
import { openPostgres } from '../storage/postgres/driver.ts';
import { freshPgliteDir } from '../test/helpers/storage.ts';
import { scratchDatabase } from './scratch-database.ts';
import { ms, summarize, table, type LatencySummary } from './stats.ts';

/** How long each case runs (BENCH_SQL_TIMEOUTS_S). */
const PHASE_MS = (Number(process.env.BENCH_SQL_TIMEOUTS_S) || 8) * 1000;

/** The default per-address limit, 1,200 requests a minute, as a gap between requests. */
const ATTACKER_GAP_MS = 50;

/** CPU work far past any time limit: a count over a cross join of three 2,000-element arrays. */
const RUNAWAY = {
  sql: 'select count(*) from unnest($1::int[]) a, unnest($1::int[]) b, unnest($1::int[]) c',
  params: [`{${Array.from({ length: 2000 }, (_, i) => i).join(',')}}`],
};

export interface SqlTimeoutsFigure {
  driver: 'pglite' | 'postgres';
  case: string;
  writes: LatencySummary | null;
  health: LatencySummary | null;
  /** The attacker's answers by status, e.g. `408: 12, 429: 300`. */
  attacker: string;
  failures: number;
}

interface Server {
  service: RunningService;
  close(): Promise<void>;
}

async function startServer(
  driver: Driver,
  overrides: Partial<Config>,
  serverLog: (message: string) => void,
): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-bench-'));
  const config: Config = {
    ...configFromEnv({}),
    dataDir,
    port: 0,
    log: serverLog,
    rateLimitPerMinute: 0,
    signUpLimitPerHour: 0,
    ...overrides,
  };
  const service = await startService(config, driver);
  return {
    service,
    async close() {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function json(
  service: RunningService,
  method: string,
  path: string,
  body: unknown,
  token?: string,
) {
  const response = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function signUp(service: RunningService, name: string): Promise<string> {
  const answer = await json(service, 'POST', '/agents', { name });
  if (answer.status !== 201) throw new Error(`sign-up failed: ${answer.status}`);
  return answer.body.api_token as string;
}

/** One case: the writer and the health poller for PHASE_MS, with or without the attacker. */
async function runCase(
  service: RunningService,
  attack: boolean,
  signal: AbortSignal,
): Promise<Omit<SqlTimeoutsFigure, 'driver' | 'case'>> {
  const writer = await signUp(service, `writer ${Math.random()}`);
  const attacker = await signUp(service, `attacker ${Math.random()}`);
  const workspace = await json(service, 'POST', '/workspaces', { visibility: 'private' }, writer);
  const workspaceId = workspace.body.workspace_id as string;
  const until = performance.now() + PHASE_MS;
  const running = () => performance.now() < until && !signal.aborted;
  const writes: number[] = [];
  const health: number[] = [];
  const answers = new Map<number, number>();
  let failures = 0;

  const writing = (async () => {
    for (let i = 0; running(); i++) {
      const started = performance.now();
      const response = await fetch(
        `${service.baseUrl}/workspaces/${workspaceId}/files/note-${i}.md`,
        {
          method: 'PUT',
          headers: { authorization: `Bearer ${writer}` },
          body: `---\nstage: draft\n---\nNote ${i}.\n`,
        },
      );
      await response.arrayBuffer();
      if (response.status === 201) writes.push(performance.now() - started);
      else failures++;
    }
  })();
  const polling = (async () => {
    while (running()) {
      const started = performance.now();
      const response = await fetch(`${service.baseUrl}/health`);
      await response.arrayBuffer();
      if (response.status === 200) health.push(performance.now() - started);
      else failures++;
      // A load balancer asks every few seconds; ten times a second is plenty to see stalls.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const attacking = (async () => {
    while (attack && running()) {
      const started = performance.now();
      const answer = await json(service, 'POST', '/index/sql', RUNAWAY, attacker);
      answers.set(answer.status, (answers.get(answer.status) ?? 0) + 1);
      // No faster than the per-address limit lets one address (off here: the writer shares it).
      const wait = ATTACKER_GAP_MS - (performance.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  await Promise.all([writing, polling, attacking]);
  return {
    writes: summarize(writes),
    health: summarize(health),
    attacker: attack
      ? [...answers]
          .sort(([a], [b]) => a - b)
          .map(([status, count]) => `${status}: ${count}`)
          .join(', ')
      : '-',
    failures,
  };
}

/** Every case on one driver kind; figures go to `record` as they come. */
export async function measureSqlTimeouts(
  kind: 'pglite' | 'postgres',
  databaseUrl: string | undefined,
  signal: AbortSignal,
  record: (figure: SqlTimeoutsFigure) => void,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<void> {
  const cases: { name: string; attack: boolean; budget: boolean; stopThread?: boolean }[] = [
    { name: 'writes alone', attack: false, budget: true },
    { name: 'beside an attacker, within the budget', attack: true, budget: true },
    { name: 'beside an attacker, no budget', attack: true, budget: false },
  ];
  if (kind === 'pglite') {
    cases.push({
      name: 'beside an attacker, no budget, thread stopped (before)',
      attack: true,
      budget: false,
      stopThread: true,
    });
  }
  for (const each of cases) {
    if (signal.aborted) return;
    const scratch = kind === 'postgres' ? await scratchDatabase(databaseUrl as string) : null;
    let driver: Driver;
    if (scratch) {
      driver = await openPostgres(scratch.url);
      await migrate(driver);
    } else {
      driver = await openPglite(await freshPgliteDir(), {
        cancel: each.stopThread ? 'stop-thread' : 'in-engine',
      });
    }
    const server = await startServer(
      driver,
      each.budget ? {} : { sqlTimeoutsPerAgent: 0, sqlTimeoutsTotal: 0 },
      serverLog,
    );
    try {
      const figure = {
        driver: kind,
        case: each.name,
        ...(await runCase(server.service, each.attack, signal)),
      };
      record(figure);
      log(
        `${kind}, ${each.name}: writes p50 ${ms(figure.writes?.p50)} p99 ${ms(figure.writes?.p99)}` +
          ` (${figure.writes?.count ?? 0}), /health p99 ${ms(figure.health?.p99)}, attacker ${figure.attacker}`,
      );
    } finally {
      await server.close();
      await scratch?.drop();
    }
  }
}

/** The figures as a table, for the report. */
export function sqlTimeoutsTable(figures: readonly SqlTimeoutsFigure[]): string {
  return table([
    [
      'driver',
      'case',
      'writes',
      'write p50',
      'write p99',
      'write max',
      '/health p99',
      '/health max',
      'attacker answers',
      'failed',
    ],
    ...figures.map((f) => [
      f.driver === 'pglite' ? 'PGlite' : 'PostgreSQL',
      f.case,
      String(f.writes?.count ?? 0),
      ms(f.writes?.p50),
      ms(f.writes?.p99),
      ms(f.writes?.max),
      ms(f.health?.p99),
      ms(f.health?.max),
      f.attacker,
      String(f.failures),
    ]),
  ]);
}
