/**
 * How a workspace's receipt chain is ordered, with two real service processes on one
 * PostgreSQL: saves into one workspace, spread over both processes, timed; how many times the
 * processes reloaded the workspace meanwhile; and the chain walked at the end (one line: each
 * receipt's `prev_hash` is the hash of the one before).
 *
 *   DATABASE_URL=postgres://... npx tsx bench/receipt-chain.ts
 *
 * RECEIPT_CHAIN_SAVES (default 400) saves, RECEIPT_CHAIN_IN_FLIGHT (default 4) in flight per
 * process, RECEIPT_CHAIN_AGENTS (default 4) members saving, each through one of the processes.
 *
 * A reload is counted by PostgreSQL, not by the service: on the save path only loading a
 * WorkspaceActor reads `workspace_members` (storage/workspaces/workspaces.ts findWorkspace), so its scans
 * in `pg_stat_user_tables` count the loads. A backend's counts reach those statistics for sure
 * only when it ends, so each phase stops both processes before reading them, and a control
 * phase (start, one read of the workspace on each process, stop) gives what start-up and the
 * first loads cost: the saves' reloads are the measured phase's scans less the control's.
 * Standalone (not a section of `npm run bench`): it starts processes of its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { receiptHash, type SignedReceipt } from '../actors/receipts/receipts.ts';
import { closeTestResources } from '../test/helpers/resources.ts';
import { startServiceProcess, type ServiceProcess } from '../test/helpers/service-process.ts';
import { bounded } from './clients.ts';
import { benchDatabaseUrl, scratchDatabase } from './scratch-database.ts';
import { summarize, table } from './stats.ts';

const positive = (value: string | undefined, fallback: number) =>
  Math.max(1, Math.floor(Number(value ?? fallback)) || fallback);

const SAVES = positive(process.env.RECEIPT_CHAIN_SAVES, 400);
const IN_FLIGHT = positive(process.env.RECEIPT_CHAIN_IN_FLIGHT, 4);
const AGENTS = Math.max(2, positive(process.env.RECEIPT_CHAIN_AGENTS, 4));
/** Saves before the measured ones, on each process: JIT, prepared statements, token caches. */
const WARM_UP = 20;

type Agent = { agent_id: string; api_token: string };

const log = (line: string) => process.stdout.write(`[receipt-chain] ${line}\n`);

async function call<T>(
  base: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

async function put(base: string, agent: Agent, workspaceId: string, path: string, body: string) {
  const response = await fetch(`${base}/workspaces/${workspaceId}/files/${path}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body,
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`PUT ${path}: ${response.status} ${text}`);
}

/**
 * Scans of `workspace_members` so far, read once no process but this one is connected to the
 * database (an ending backend hands its counts over as it exits).
 */
async function memberScans(databaseUrl: string): Promise<number> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => undefined });
  try {
    for (let tries = 0; ; tries++) {
      const [others] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`;
      if (others?.n === 0) break;
      if (tries > 200) throw new Error('the service processes kept their connections');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [row] = await sql<{ scans: string }[]>`
      select (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::text as scans
      from pg_stat_user_tables where relname = 'workspace_members'`;
    return Number(row?.scans ?? 0);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Every receipt of the workspace, oldest first. */
async function chainOf(base: string, agent: Agent, workspaceId: string) {
  const receipts: SignedReceipt[] = [];
  let cursor: string | null = null;
  do {
    const page: { receipts: SignedReceipt[]; next_cursor: string | null } = await call(
      base,
      'GET',
      `/workspaces/${workspaceId}/receipts?limit=500${cursor ? `&cursor=${cursor}` : ''}`,
      agent.api_token,
    );
    receipts.push(...page.receipts);
    cursor = page.next_cursor;
  } while (cursor);
  return receipts.reverse();
}

/** Where the chain leaves one line: the index of the first receipt that does not follow. */
function firstBreak(receipts: readonly SignedReceipt[]): number | null {
  let previous: SignedReceipt | null = null;
  for (const [index, receipt] of receipts.entries()) {
    if (receipt.prev_hash !== (previous ? receiptHash(previous) : null)) return index;
    previous = receipt;
  }
  return null;
}

async function main(): Promise<void> {
  const serverUrl = benchDatabaseUrl();
  if (!serverUrl) {
    log('skipped: set DATABASE_URL (or BENCH_DATABASE_URL) to a PostgreSQL server');
    return;
  }
  const scratch = await scratchDatabase(serverUrl);
  // Two processes of one deployment share their blob store (a volume, or S3).
  const dataDir = mkdtempSync(join(tmpdir(), 'receipt-chain-bench-'));
  const env = { DATABASE_URL: scratch.url, DATA_DIR: dataDir };
  const both = () => Promise.all([startServiceProcess(env), startServiceProcess(env)]);
  const stop = (processes: readonly ServiceProcess[]) =>
    Promise.all(processes.map((p) => p.stop()));
  try {
    // Set-up: members signed up and joined through both processes.
    let processes = await both();
    const bases = processes.map((p) => p.baseUrl);
    const baseOf = (i: number) => bases[i % 2] as string;
    const agents: Agent[] = [];
    for (let i = 0; i < AGENTS; i++) {
      agents.push(await call<Agent>(baseOf(i), 'POST', '/agents', null, { name: `chain ${i}` }));
    }
    const owner = agents[0] as Agent;
    const { workspace_id: workspaceId } = await call<{ workspace_id: string }>(
      baseOf(0),
      'POST',
      '/workspaces',
      owner.api_token,
      {},
    );
    for (const [i, guest] of agents.slice(1).entries()) {
      const { invite_token } = await call<{ invite_token: string }>(
        baseOf(i),
        'POST',
        `/workspaces/${workspaceId}/invites`,
        owner.api_token,
        {},
      );
      await call(baseOf(i + 1), 'POST', '/invites/redeem', guest.api_token, { invite_token });
    }
    for (const [i, agent] of agents.entries()) {
      for (let k = 0; k < WARM_UP; k++) {
        await put(baseOf(i), agent, workspaceId, `warm/${i}.txt`, `warm ${k}`);
      }
    }
    await stop(processes);
    const atStart = await memberScans(scratch.url);

    // Control: start-up and each process's first load of the workspace, no saves.
    processes = await both();
    for (const p of processes) {
      await call(p.baseUrl, 'GET', `/workspaces/${workspaceId}`, owner.api_token);
    }
    await stop(processes);
    const control = (await memberScans(scratch.url)) - atStart;
    const afterControl = atStart + control;

    // Measured: the same, then the saves, every agent through its own process.
    processes = await both();
    for (const p of processes) {
      await call(p.baseUrl, 'GET', `/workspaces/${workspaceId}`, owner.api_token);
    }
    const latencies: number[] = [];
    let failures = 0;
    let firstError: string | undefined;
    const started = performance.now();
    await Promise.all(
      processes.map((p, side) => {
        const mine = agents.filter((_, i) => i % 2 === side);
        const count = Math.floor(SAVES / 2) + (side === 0 ? SAVES % 2 : 0);
        return bounded(count, IN_FLIGHT, async (k) => {
          const agent = mine[k % mine.length] as Agent;
          const sent = performance.now();
          try {
            await put(
              p.baseUrl,
              agent,
              workspaceId,
              `notes/${agent.agent_id}/${k % 20}.txt`,
              `${k}`,
            );
            latencies.push(performance.now() - sent);
          } catch (error) {
            failures++;
            firstError ??= String(error);
          }
        });
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const receipts = await chainOf(processes[1]?.baseUrl as string, owner, workspaceId);
    await stop(processes);
    const reloads = (await memberScans(scratch.url)) - afterControl - control;

    const latency = summarize(latencies);
    const broken = firstBreak(receipts);
    const expected = AGENTS * WARM_UP + SAVES - failures;
    log(
      `${SAVES} saves, ${IN_FLIGHT} in flight on each of 2 processes, ${AGENTS} members, one workspace`,
    );
    process.stdout.write(
      `${table([
        ['saves/s', 'p50', 'p99', 'max', 'failed', 'workspace reloads', 'control scans', 'chain'],
        [
          (latencies.length / seconds).toFixed(0),
          `${latency?.p50.toFixed(1) ?? '-'} ms`,
          `${latency?.p99.toFixed(1) ?? '-'} ms`,
          `${latency?.max.toFixed(1) ?? '-'} ms`,
          String(failures),
          String(reloads),
          String(control),
          broken === null && receipts.length === expected
            ? `one line of ${receipts.length}`
            : `BROKEN at ${broken ?? '-'} (${receipts.length} of ${expected})`,
        ],
      ])}\n`,
    );
    if (firstError) log(`first failure: ${firstError}`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await scratch.drop();
    await closeTestResources();
  }
}

await main();
