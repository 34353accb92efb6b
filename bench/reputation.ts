/**
 * The public reputation record (`GET /agents/<id>/reputation`) of an agent with 10,000 agreed
 * deals with 200 counterparties, most of them rated, over HTTP; beside, in the same run on the
 * same server, `GET /health` (the same door and one database round trip: the floor of any
 * answer that reads the database) and the record's own SQL (storage/deals/reputation.ts reputationOf) run
 * directly on the driver, which splits the figure into the queries and the rest. The lanes take
 * turns request by request, so load that comes and goes weighs on all of them alike. Nothing
 * changes the record while it is measured, so after the first round the endpoint answers the
 * record its process kept (actors/deals/record-cache.ts: one look-up that nothing changed); the
 * SQL lane is what the next read after a change costs on top of that.
 *
 * The deals are a fixture written by SQL straight into deals, deal_parties and deal_ratings
 * (receipts shaped like the service's, unsigned), on a server started the way every other
 * section starts one, then ANALYZEd. Counterparties are skewed, as real trade is: a few take
 * many of the deals, so "most first" has something to order.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { dealCodec, newDeal } from '../machines/deal.ts';
import type { Driver } from '../storage/driver.ts';
import { reputationOf } from '../storage/deals/reputation.ts';
import { rebuildReputationCounts } from '../storage/deals/reputation-counts.ts';
import { FINAL_PAYMENTS_SQL, paymentCountsSql } from '../storage/payments/deal-counts.ts';
import { startBenchServer } from './bench-server.ts';
import { type TestServer } from '../test/helpers/server.ts';
import { TEST_DATABASE_URL } from '../test/helpers/storage.ts';
import { newWorkspace } from '../test/helpers/workspaces.ts';
import { bounded } from './clients.ts';
import type { DriverKind } from './commands.ts';
import { scratchDatabase } from './scratch-database.ts';
import { summarize } from './stats.ts';

export const REPUTATION_DEALS = 10_000;
export const REPUTATION_COUNTERPARTIES = 200;
/** Deals whose counterparty's rating of the agent was corrected once (the old one superseded). */
const CORRECTED_EVERY = 10;
/** Rows per statement: a few MB of JSON, one round trip each. */
const BATCH = 2_000;
const WARM_UP_ROUNDS = 20;
const MAX_ROUNDS = 500;
/** A slow driver measures fewer rounds, so one driver stays near this long. */
const BUDGET_MS = 15_000;
const MIN_ROUNDS = 50;
const MAX_FAILURES = 5;

export type ReputationLane =
  | 'GET /agents/<id>/reputation'
  | 'GET /health (baseline)'
  | 'reputationOf SQL on the driver'
  | 'per-request scan SQL of 0.40 (baseline)';

export interface ReputationFigure {
  driver: DriverKind;
  lane: ReputationLane;
  count: number;
  failures: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  firstError?: string;
}

export interface ReputationFixture {
  driver: DriverKind;
  deals: number;
  counterparties: number;
  /** Ratings on record, standing and superseded. */
  ratings: number;
  loadSeconds: number;
  /** What the endpoint answered once loaded, to show the fixture is what it says. */
  answered: { deals_agreed: number; distinct_counterparties: number; ratings: number };
}

export interface ReputationSink {
  figure(figure: ReputationFigure): void;
  fixture(fixture: ReputationFixture): void;
  note(line: string): void;
}

/** Why this driver cannot be measured here, or null (as for the index SQL section). */
export function reputationSkipReason(kind: DriverKind, databaseUrl: string | undefined) {
  if (kind === 'postgres' && !databaseUrl) {
    return 'neither BENCH_DATABASE_URL nor DATABASE_URL is set';
  }
  if (kind === 'pglite' && TEST_DATABASE_URL) {
    return 'DATABASE_URL sends every test server to PostgreSQL; set BENCH_DATABASE_URL instead';
  }
  return null;
}

/**
 * What 0.40 ran on every request before the counts were kept (its counts and counterparties
 * scanned from deal_parties, deal_ratings and payments): the baseline the kept counts replace.
 */
const SCAN_OF_0_40 = `with mine as (select deal_id from deal_parties where agent_id = $1),
  others as (
    select o.agent_id, count(*)::int as deals_agreed
    from deal_parties o join mine on mine.deal_id = o.deal_id
    where o.agent_id <> $1 group by o.agent_id)
  select
    (select count(*)::int from deal_parties p where p.agent_id = $1) as deals_agreed,
    (select count(*)::int from others) as distinct_counterparties,
    (select count(*)::int from deal_ratings r where r.ratee_id = $1 and r.superseded_by is null
      and exists (select 1 from payments p where p.deal_id = r.deal_id and p.status = 'final'))
      as payment_backed_ratings,
    s.scored_ratings, s.average_score,
    (select jsonb_agg(jsonb_build_object('agent_id', t.agent_id, 'name', t.name,
       'deals_agreed', t.deals_agreed,
       'payments_final', (select count(*)::int from payments p where p.status = 'final'
          and ((p.payer_agent_id = $1 and p.payee_agent_id = t.agent_id)
            or (p.payee_agent_id = $1 and p.payer_agent_id = t.agent_id))))
       order by t.deals_agreed desc, t.agent_id)
     from (select o.agent_id, a.name, o.deals_agreed from others o
           join agents a on a.agent_id = o.agent_id
           order by o.deals_agreed desc, o.agent_id limit 100) t) as counterparties
  from (select count(r.score)::int as scored_ratings,
          round(avg(r.score), 2)::float8 as average_score
        from deal_ratings r
        where r.ratee_id = $1 and r.superseded_by is null and r.score is not null) s`;

/** Deal i's counterparty: index ~ 200 * u^2, so the first few take most of the deals. */
function counterpartyOf(i: number): number {
  const u = ((i * 7_919) % REPUTATION_DEALS) / REPUTATION_DEALS;
  return Math.floor(u * u * REPUTATION_COUNTERPARTIES);
}

/** A closed deal's machine, as the service would have persisted it. */
function closedMachine(dealId: string, agent: string, other: string): unknown {
  const parties = [agent, other];
  const sha256 = '0'.repeat(64);
  let state = newDeal(dealId);
  for (const party of parties) {
    state = dealCodec.step(state, { type: 'agree', agent: party, version: 1, sha256, parties });
  }
  state = dealCodec.step(state, { type: 'rate', rater: agent, ratee: other });
  state = dealCodec.step(state, { type: 'rate', rater: other, ratee: agent });
  return dealCodec.persist(state);
}

const LOAD_DEALS = `with input as (
  select * from jsonb_to_recordset($1::text::jsonb) as r(deal_id uuid, path text, agent uuid,
    other uuid, machine jsonb, at timestamptz)
), made as (
  insert into deals (deal_id, workspace_id, path, status, machine, created_at)
  select deal_id, $2::uuid, path, 'closed', machine, at from input
)
insert into deal_parties (deal_id, agent_id, agreed_at)
select deal_id, agent, at from input union all select deal_id, other, at from input`;

// A correction names its successor, which the same statement writes: the foreign key of
// superseded_by is deferred to the commit.
const LOAD_RATINGS = `insert into deal_ratings (rating_id, deal_id, rater_id, ratee_id,
    delivered_can, accepted_on_need, score, comment, payment_backed, rated_at, superseded_by,
    receipt)
  select rating_id, deal_id, rater, ratee, delivered_can, true, score, comment, false, at,
    superseded_by,
    jsonb_build_object('receipt_id', rating_id, 'action', 'rate', 'workspace_id', $2::uuid,
      'deal_id', deal_id, 'rater', rater, 'ratee', ratee, 'score', score, 'at', at,
      'signature', 'bench fixture')
  from jsonb_to_recordset($1::text::jsonb) as r(rating_id uuid, deal_id uuid, rater uuid,
    ratee uuid, delivered_can boolean, score int, comment text, at timestamptz,
    superseded_by uuid)`;

/**
 * REPUTATION_DEALS closed deals between `agent` and one of `others` each, in one workspace:
 * both parties, the other's rating of the agent (corrected once on every CORRECTED_EVERY-th
 * deal) and the agent's of the other. Answers how many ratings it wrote.
 */
export async function loadReputationFixture(
  driver: Driver,
  workspaceId: string,
  agent: string,
  others: readonly string[],
): Promise<number> {
  const start = Date.UTC(2026, 0, 1);
  let ratings = 0;
  for (let first = 0; first < REPUTATION_DEALS; first += BATCH) {
    const deals = Array.from({ length: Math.min(BATCH, REPUTATION_DEALS - first) }, (_, k) => {
      const i = first + k;
      const dealId = randomUUID();
      const other = others[counterpartyOf(i) % others.length] as string;
      return {
        deal_id: dealId,
        path: `deals/${i}.md`,
        agent,
        other,
        machine: closedMachine(dealId, agent, other),
        at: new Date(start + i * 60_000).toISOString(),
      };
    });
    const rows = deals.flatMap((deal, k) => {
      const i = first + k;
      const at = (minutes: number) =>
        new Date(Date.parse(deal.at) + minutes * 60_000).toISOString();
      const rating = (
        rater: string,
        ratee: string,
        minutes: number,
        supersededBy: string | null,
      ) => ({
        rating_id: randomUUID(),
        deal_id: deal.deal_id,
        rater,
        ratee,
        delivered_can: i % 7 !== 0,
        score: 1 + (i % 5),
        comment: i % 3 === 0 ? `deal ${i}: as agreed` : null,
        at: at(minutes),
        superseded_by: supersededBy,
      });
      const standing = rating(deal.other, agent, 30, null);
      const mine = rating(agent, deal.other, 31, null);
      return i % CORRECTED_EVERY === 0
        ? [rating(deal.other, agent, 20, standing.rating_id), standing, mine]
        : [standing, mine];
    });
    await driver.query(LOAD_DEALS, [JSON.stringify(deals), workspaceId]);
    await driver.query(LOAD_RATINGS, [JSON.stringify(rows), workspaceId]);
    ratings += rows.length;
  }
  // Written by SQL, not by the moves: the kept counts are rebuilt from it (the repair path).
  await rebuildReputationCounts(driver, FINAL_PAYMENTS_SQL);
  await driver.query('analyze');
  return ratings;
}

interface Lane {
  lane: ReputationLane;
  run: () => Promise<void>;
  samples: number[];
  failures: number;
  firstError?: string;
}

/** The nearest-rank percentile, as bench/stats.ts summarize takes p50 and p99. */
function nearestRank(samplesMs: readonly number[], p: number): number {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0;
}

async function timeOnce(lane: Lane): Promise<void> {
  const started = performance.now();
  try {
    await lane.run();
    lane.samples.push(performance.now() - started);
  } catch (error) {
    lane.failures++;
    lane.firstError ??= error instanceof Error ? error.message : String(error);
  }
}

/** Rounds of every lane once, a different one first each round; false once one fails too often. */
async function rounds(lanes: readonly Lane[], n: number, signal: AbortSignal): Promise<boolean> {
  for (let round = 0; round < n && !signal.aborted; round++) {
    for (let k = 0; k < lanes.length; k++)
      await timeOnce(lanes[(round + k) % lanes.length] as Lane);
    if (lanes.some((lane) => lane.failures >= MAX_FAILURES)) return false;
  }
  return true;
}

/** A GET whose answer must be 200; the body is read to its end, as a client would. */
async function fetchOk(url: string): Promise<unknown> {
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

async function startServer(
  kind: DriverKind,
  databaseUrl: string | undefined,
  serverLog: (message: string) => void,
): Promise<{ server: TestServer; drop: () => Promise<void> }> {
  if (kind === 'pglite') {
    return { server: await startBenchServer({ log: serverLog }), drop: async () => undefined };
  }
  const scratch = await scratchDatabase(databaseUrl as string);
  try {
    const server = await startBenchServer({ databaseUrl: scratch.url, log: serverLog });
    return { server, drop: scratch.drop };
  } catch (error) {
    await scratch.drop();
    throw error;
  }
}

/**
 * On one driver: a real server on a fresh database, the agent and its counterparties signed up
 * over HTTP, the fixture, then the three lanes in turn. Figures go to `sink` when measured.
 */
export async function measureReputation(
  kind: DriverKind,
  databaseUrl: string | undefined,
  signal: AbortSignal,
  sink: ReputationSink,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<void> {
  const { server, drop } = await startServer(kind, databaseUrl, serverLog);
  try {
    const { driver } = server.services;
    if (driver.kind !== kind)
      throw new Error(`the test server runs on ${driver.kind}, not ${kind}`);
    const agent = await server.signUp('bench reputable agent');
    const others = await bounded(
      REPUTATION_COUNTERPARTIES,
      20,
      async (i) => (await server.signUp(`bench counterparty ${i}`)).agent_id,
    );
    const workspaceId = await newWorkspace(server, agent);

    const started = performance.now();
    const ratings = await loadReputationFixture(driver, workspaceId, agent.agent_id, others);
    const loadSeconds = (performance.now() - started) / 1000;
    log(
      `${kind}: ${REPUTATION_DEALS.toLocaleString('en-US')} deals in ${loadSeconds.toFixed(1)} s`,
    );

    const url = server.url(`/agents/${agent.agent_id}/reputation`);
    const first = (await fetchOk(url)) as {
      counts: { deals_agreed: number; distinct_counterparties: number };
      ratings: unknown[];
    };
    sink.fixture({
      driver: kind,
      deals: REPUTATION_DEALS,
      counterparties: others.length,
      ratings,
      loadSeconds,
      answered: {
        deals_agreed: first.counts.deals_agreed,
        distinct_counterparties: first.counts.distinct_counterparties,
        ratings: first.ratings.length,
      },
    });
    if (
      first.counts.deals_agreed !== REPUTATION_DEALS ||
      first.counts.distinct_counterparties !== others.length
    ) {
      sink.note(
        `reputation, ${kind}: the endpoint counted ${first.counts.deals_agreed} deals with ` +
          `${first.counts.distinct_counterparties} counterparties, not ${REPUTATION_DEALS} with ${others.length}`,
      );
    }

    const lane = (name: ReputationLane, run: () => Promise<void>): Lane => ({
      lane: name,
      run,
      samples: [],
      failures: 0,
    });
    const lanes = [
      lane('GET /agents/<id>/reputation', async () => void (await fetchOk(url))),
      lane('GET /health (baseline)', async () => void (await fetchOk(server.url('/health')))),
      lane(
        'reputationOf SQL on the driver',
        async () => void (await reputationOf(driver, agent.agent_id, paymentCountsSql)),
      ),
      lane(
        'per-request scan SQL of 0.40 (baseline)',
        async () => void (await driver.query(SCAN_OF_0_40, [agent.agent_id])),
      ),
    ];
    const warmUpStarted = performance.now();
    let healthy = await rounds(lanes, WARM_UP_ROUNDS, signal);
    const roundMs = (performance.now() - warmUpStarted) / WARM_UP_ROUNDS;
    const measured = Math.max(
      MIN_ROUNDS,
      Math.min(MAX_ROUNDS, Math.floor(BUDGET_MS / Math.max(roundMs, 0.001))),
    );
    for (const each of lanes) {
      each.samples = [];
      if (healthy) {
        each.failures = 0;
        delete each.firstError;
      }
    }
    if (healthy) healthy = await rounds(lanes, measured, signal);
    for (const each of lanes) {
      const summary = summarize(each.samples);
      sink.figure({
        driver: kind,
        lane: each.lane,
        count: summary?.count ?? 0,
        failures: each.failures,
        p50Ms: summary?.p50 ?? 0,
        p95Ms: nearestRank(each.samples, 0.95),
        p99Ms: summary?.p99 ?? 0,
        maxMs: summary?.max ?? 0,
        ...(each.firstError ? { firstError: each.firstError } : {}),
      });
    }
    log(
      `${kind} reputation: ${lanes[0]?.samples.length ?? 0} rounds` +
        (healthy ? '' : ` (stopped: a lane failed ${MAX_FAILURES} times)`),
    );
  } finally {
    await server.close();
    await drop();
  }
}
