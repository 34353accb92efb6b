/**
 * Agents' SQL over the index (`POST /index/sql`) with 100,000 indexed markdown files, a third of
 * them in private workspaces: a store query (by convention and a dimension value), a full-text
 * query over the public workspaces and one over the reader's own scope (its workspaces, one
 * private, and the listings), each through the sandbox beside the same question asked of the
 * base tables directly on the driver. Target: the sandbox adds under 1 ms per query at p50.
 *
 * The sandbox is timed in-process (`runIndexQuery` with the server's own services and the
 * agent's principal), so no HTTP is in any figure: the SQL policy (parse, deparse, re-parse),
 * the scope CTEs over the views, the binding statement, the reader role, the time limit and the
 * agents' pool. Beside the two, the sandbox's wrapped text runs on its transaction without the
 * policy check, and the check runs alone: they split the overhead into the check's share and
 * the share of the views and the binding. A third query, `select 1`, reads no view: what the
 * sandbox costs whatever the data. The paths take turns query by query, so load that comes
 * and goes weighs on all of them alike.
 *
 * The files are a fixture written by SQL straight into the tables (files, file_versions,
 * indexed_versions with its tsvector, listings for half of the public ones), on a server started the way
 * every other section starts one, then ANALYZEd.
 */
import { createHash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { contentTypeOf } from '../actors/files/content-type.ts';
import { runIndexQuery, sqlTimeoutMs } from '../actors/index/queries.ts';
import { principalOf, type Principal } from '../actors/kernel/principal.ts';
import type { Services } from '../actors/kernel/services.ts';
import { checkUserSql } from '../actors/index/sql-policy.ts';
import { INDEX_ROW_CAP } from '../protocol/index/sql.ts';
import { KNOWN_CONVENTIONS } from '../protocol/conventions/known.ts';
import { findAgent } from '../storage/agents/agents.ts';
import type { Driver } from '../storage/driver.ts';
import { searchText } from '../storage/index/file-index.ts';
import { bindScope, scopedQuery, type IndexScope } from '../storage/index/index-scope.ts';
import { startBenchServer } from './bench-server.ts';
import { type TestServer } from '../test/helpers/server.ts';
import { TEST_DATABASE_URL } from '../test/helpers/storage.ts';
import type { DriverKind } from './commands.ts';
import { scratchDatabase } from './scratch-database.ts';

export const INDEXED_FILES = 100_000;
const WORKSPACES = 300;
/** Every third workspace is private: its files are the rows no other agent's filter may touch. */
const PRIVATE_EVERY = 3;
/** The reader owns the first few workspaces (the first of them private): its scope `own`. */
const READER_WORKSPACES = 3;
const OWNERS = 5;
/** Files written per statement: a few MB of JSON, one round trip each. */
const BATCH = 5_000;
/** Untimed rounds first (plans cached, pages in memory, JIT), then the measured ones. */
export const WARM_UP_ROUNDS = 10;
/** A slow driver measures fewer rounds, so one query on one driver stays near this long. */
const QUERY_BUDGET_MS = 10_000;
const MIN_ROUNDS = 30;
/** A path that fails this often is not measured further (its figures would mean nothing). */
const MAX_FAILURES = 5;

export type IndexSqlQuery = 'store' | 'full-text' | 'own full-text' | 'select 1';

export type IndexSqlPath =
  | 'sandbox: runIndexQuery'
  | 'sandbox SQL, policy check skipped'
  | 'direct SQL on the tables'
  | 'policy check alone: checkUserSql';

export interface IndexSqlFigure {
  driver: DriverKind;
  query: IndexSqlQuery;
  path: IndexSqlPath;
  count: number;
  failures: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  /** Rows of the last answer: each path must answer the same number (none: no query ran). */
  rows?: number;
  firstError?: string;
}

export interface IndexSqlFixture {
  driver: DriverKind;
  files: number;
  listings: number;
  workspaces: number;
  /** Of the workspaces, how many are private (their files no other agent may reach). */
  privateWorkspaces: number;
  /** Files in the reader's own workspaces (scope `own` reads them and the listings). */
  readerFiles: number;
  /** Distinct place values, and words the bodies are made of. */
  cities: number;
  words: number;
  loadSeconds: number;
  /** The service's own time limit for agents' SQL on this driver. */
  sqlTimeoutMs: number;
}

export interface IndexSqlOptions {
  /** PostgreSQL server URL; a scratch database is made on it and dropped after. */
  databaseUrl?: string;
  /** Measured rounds per query at most (fewer when a round is slow). */
  rounds: number;
  /** Logs EXPLAIN ANALYZE of the sandbox's wrapped text and of the direct SQL. */
  explain: boolean;
}

export interface IndexSqlSink {
  figure(figure: IndexSqlFigure): void;
  fixture(fixture: IndexSqlFixture): void;
  note(line: string): void;
}

export interface QueryCase {
  query: IndexSqlQuery;
  scope: IndexScope;
  /** What an agent sends. */
  sandbox: string;
  /**
   * The same question over the base tables, as the service's own code would ask it; `$1`, when
   * it is there, is the reader's agent id.
   */
  direct: string;
}

export const INDEX_SQL_QUERIES: readonly QueryCase[] = [
  {
    query: 'store',
    scope: 'store',
    sandbox: `select name, kind, dimensions->>'location' as location from store
      where convention = 'local-services' and dimensions @> '{"location": "Berlin"}' limit 50`,
    direct: `select iv.fields->>'name' as name, l.kind, iv.fields->>'location' as location
      from listings l
      join workspaces w on w.workspace_id = l.workspace_id and w.visibility = 'public'
      join indexed_versions iv on iv.workspace_id = l.workspace_id and iv.path = l.path
        and iv.current and iv.visibility = 'public'
      where iv.convention = 'local-services' and iv.dimensions @> '{"location": "Berlin"}'
      limit 50`,
  },
  {
    query: 'full-text',
    scope: 'public',
    sandbox: `select workspace_id, path from files
      where search @@ websearch_to_tsquery('english', 'bike repair') limit 50`,
    direct: `select iv.workspace_id, iv.path
      from indexed_versions iv
      join workspaces w on w.workspace_id = iv.workspace_id and w.visibility = 'public'
      where iv.current and iv.visibility = 'public'
        and iv.search @@ websearch_to_tsquery('english', 'bike repair') limit 50`,
  },
  {
    // The caller's own workspaces (one of them private) and every listing: the scope whose
    // filter must run only on the caller's own private rows, never on another agent's.
    query: 'own full-text',
    scope: 'own',
    sandbox: `select workspace_id, path from files
      where search @@ websearch_to_tsquery('english', 'bike repair') limit 50`,
    direct: `select iv.workspace_id, iv.path
      from indexed_versions iv
      where iv.current and iv.search @@ websearch_to_tsquery('english', 'bike repair')
        and (iv.workspace_id in (select workspace_id from workspace_members where agent_id = $1)
          or (iv.visibility = 'public' and exists (select 1 from listings l
            where l.workspace_id = iv.workspace_id and l.path = iv.path)))
      limit 50`,
  },
  // What the sandbox costs whatever the data: no view is read.
  { query: 'select 1', scope: 'own', sandbox: 'select 1', direct: 'select 1' },
];

// The fixture's vocabulary: small, so that words repeat the way a marketplace's do.
// prettier-ignore
const CITIES = [
  'Berlin', 'Hamburg', 'Munich', 'Cologne', 'Frankfurt', 'Stuttgart', 'Leipzig', 'Dresden',
  'Vienna', 'Zurich', 'Paris', 'Lyon', 'Marseille', 'Madrid', 'Barcelona', 'Valencia', 'Lisbon',
  'Porto', 'Rome', 'Milan', 'Naples', 'Turin', 'Amsterdam', 'Rotterdam', 'Brussels', 'Antwerp',
  'Copenhagen', 'Stockholm', 'Oslo', 'Helsinki', 'Warsaw', 'Krakow', 'Prague', 'Budapest',
  'Bucharest', 'Athens', 'Dublin', 'London', 'Manchester', 'Edinburgh', 'New York', 'Boston',
  'Chicago', 'Toronto', 'Montreal', 'San Francisco', 'Seattle', 'Austin', 'Sydney', 'Tokyo',
];
// prettier-ignore
const LOCAL_SERVICES = [
  'bike repair', 'plumbing', 'dog walking', 'house cleaning', 'maths tutoring', 'moving help',
  'gardening', 'photography', 'furniture assembly', 'tax advice', 'piano lessons', 'car repair',
];
// prettier-ignore
const TASKS = [
  'code review', 'German-to-English translation', 'market research', 'data extraction',
  'test writing', 'summarising papers', 'bug triage', 'log analysis',
];
// prettier-ignore
const WORDS = [
  'bike', 'repair', 'fast', 'reliable', 'service', 'agent', 'weekly', 'local', 'price', 'quote',
  'hour', 'day', 'team', 'tools', 'parts', 'delivery', 'pickup', 'city', 'centre', 'north',
  'south', 'east', 'west', 'experience', 'years', 'certified', 'insured', 'friendly', 'careful',
  'clean', 'small', 'large', 'jobs', 'projects', 'clients', 'reviews', 'booking', 'online',
  'calendar', 'availability', 'evenings', 'weekends', 'mornings', 'urgent', 'same', 'next',
  'week', 'month', 'contract', 'invoice', 'payment', 'deposit', 'refund', 'guarantee', 'warranty',
  'quality', 'standard', 'premium', 'basic', 'package', 'offer', 'discount', 'students', 'family',
  'office', 'home', 'garden', 'kitchen', 'bathroom', 'roof', 'window', 'door', 'floor', 'wall',
  'paint', 'wood', 'metal', 'glass', 'electric', 'water', 'heating', 'cooling', 'network',
  'website', 'shop', 'blog', 'design', 'code', 'data', 'report', 'research', 'translation',
  'review', 'tests', 'deploy', 'server', 'api', 'model', 'prompt', 'dataset', 'pipeline',
  'schedule', 'support', 'training', 'advice', 'lessons', 'beginner', 'advanced', 'language',
  'english', 'german', 'french', 'spanish', 'italian', 'dutch', 'contact', 'message', 'knock',
  'files', 'workspace', 'receipt', 'deal', 'trade', 'market', 'listing', 'wheel', 'chain',
];

/** mulberry32: the same fixture every run, from a seed. */
function randomSource(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  return { next, int, pick };
}

type Random = ReturnType<typeof randomSource>;

const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function sentence(random: Random): string {
  const words = Array.from({ length: random.int(6, 14) }, () => random.pick(WORDS));
  return `${capital(words.join(' '))}.`;
}

/** A listing's name and its convention's dimensions, with values such a listing would have. */
function header(convention: string, random: Random): Record<string, unknown> {
  switch (convention) {
    case 'agent-services': {
      const task = random.pick(TASKS);
      return {
        name: `${capital(task)} by agent`,
        task_type: task,
        interface: random.pick(['http-api', 'mcp', 'email', 'workspace-files']),
        turnaround: random.pick(['within 24 hours', 'under 10 minutes', 'within a week']),
        payment: `${random.int(1, 50)} USDC per task, on acceptance`,
        contact_method: random.pick(['knock', 'message', 'email']),
      };
    }
    case 'agent-tools':
      return {
        name: `${capital(random.pick(WORDS))} ${random.pick(['API', 'MCP server', 'data feed'])}`,
        tool_type: random.pick(['api', 'mcp-server', 'data-feed', 'dataset', 'library']),
        endpoint: `https://api.example-${random.int(1, 500)}.com/v1`,
        auth: random.pick(['none', 'api-key', 'oauth']),
        pricing: `${random.int(1, 9)} USDC per 1,000 calls`,
      };
    case 'agent-help':
      return {
        name: `Help with ${random.pick(['setup', 'debugging', 'deployment'])}`,
        topic: random.pick(['setup', 'debugging', 'integration', 'deployment', 'other']),
        delivery: random.pick(['remote', 'in-person', 'local-only']),
        metro: random.pick(CITIES),
        rate: `${random.int(20, 150)} USDC per hour`,
      };
    case 'local-services': {
      const service = random.pick(LOCAL_SERVICES);
      const location = random.pick(CITIES);
      return {
        name: `${capital(service)} in ${location}`,
        service,
        location,
        service_area_km: random.int(2, 50),
        rate: `${random.int(15, 120)} EUR per hour`,
        languages: [random.pick(['en', 'de', 'fr', 'es', 'it'])],
        insured: random.pick(['yes', 'no']),
      };
    }
    case 'website-build':
      return {
        name: `${capital(random.pick(['landing page', 'shop', 'blog', 'portfolio']))} build`,
        site_type: random.pick(['landing-page', 'shop', 'blog', 'web-app', 'portfolio']),
        pages: random.int(1, 30),
        stack: random.pick(['astro', 'next.js', 'wordpress', 'plain html']),
        budget: `${random.int(200, 5000)} USDC`,
        hosting: random.pick(['client', 'provider', 'either']),
      };
    default: {
      const area = random.pick(['tenancy', 'employment', 'contracts', 'immigration']);
      return {
        name: `${capital(area)} law`,
        practice_area: area,
        jurisdiction: random.pick(['DE', 'FR', 'UK', 'US-NY', 'NL']),
        city: random.pick(CITIES),
        fee: `${random.int(80, 400)} EUR`,
        fee_type: random.pick(['fixed', 'hourly', 'contingency']),
      };
    }
  }
}

/** The markdown a header and body make, for the sha256 and size a real save would record. */
function markdown(fields: Record<string, unknown>, body: string): string {
  const lines = Object.entries(fields).map(([key, value]) => `${key}: ${JSON.stringify(value)}`);
  return `---\n${lines.join('\n')}\n---\n${body}`;
}

interface Workspace {
  workspace_id: string;
  owner: string;
  visibility: 'public' | 'private';
  /** Files made in it so far: paths are numbered per workspace, so they repeat across them. */
  files: number;
}

/**
 * One indexed file as the load statement reads it. Half of those in public workspaces are
 * listings (need or can); the rest are notes, a third of them on no convention.
 */
function fixtureFile(i: number, workspaces: readonly Workspace[], random: Random) {
  const workspace = random.pick(workspaces);
  const listing = i % 2 === 0 && workspace.visibility === 'public';
  const kind = listing ? random.pick(['need', 'can'] as const) : null;
  const convention = !listing && random.next() < 1 / 3 ? null : random.pick(KNOWN_CONVENTIONS).name;
  const body = Array.from({ length: random.int(2, 5) }, () => sentence(random)).join(' ');
  const fields: Record<string, unknown> = convention
    ? {
        convention,
        ...(kind ? { kind } : {}),
        ...header(convention, random),
        description: sentence(random),
        ...(kind ? { [kind]: sentence(random) } : {}),
        contact: random.pick(['knock', 'message']),
      }
    : { title: capital(random.pick(WORDS)), tags: [random.pick(WORDS), random.pick(WORDS)] };
  const text = markdown(fields, body);
  return {
    workspace_id: workspace.workspace_id,
    // Paths repeat across workspaces as real ones do (the planner's join estimates rest on it).
    path: `${listing ? 'listings' : 'notes'}/${++workspace.files}.md`,
    author_id: workspace.owner,
    visibility: workspace.visibility,
    sha256: createHash('sha256').update(text).digest('hex'),
    size: Buffer.byteLength(text),
    convention,
    fields,
    body,
    search_text: searchText(fields, body),
    kind,
    listing_id: kind ? randomUUID() : null,
    saved_at: new Date(Date.UTC(2026, 0, 1) + random.int(0, 90 * 86_400) * 1000).toISOString(),
  };
}

const CONTENT_TYPE = contentTypeOf('file.md');

/**
 * One statement per batch: the version (with a receipt shaped like the service's, unsigned),
 * the current file, the indexed version with its tsvector, the listing. The foreign keys are
 * checked at the end of the statement, when every part is written.
 */
const LOAD_BATCH = `with input as (
  select * from jsonb_to_recordset($1::text::jsonb) as r(workspace_id uuid, path text,
    author_id uuid, visibility text, sha256 text, size bigint, convention text, fields jsonb, body text,
    search_text text, kind text, listing_id uuid, saved_at timestamptz)
), versions as (
  insert into file_versions (workspace_id, path, version, action, sha256, size, bytes_kept,
    agent_id, saved_at, receipt)
  select workspace_id, path, 1, 'save', sha256, size, true, author_id, saved_at,
    jsonb_build_object('receipt_id', gen_random_uuid(), 'workspace_id', workspace_id,
      'path', path, 'action', 'save', 'version', 1, 'size', size, 'sha256', sha256,
      'agent_id', author_id, 'saved_at', saved_at, 'signature', 'bench fixture')
  from input
), current_files as (
  insert into files (workspace_id, path, version, sha256, size, content_type, saved_at, saved_by)
  select workspace_id, path, 1, sha256, size, $2, saved_at, author_id from input
), indexed as (
  insert into indexed_versions (workspace_id, path, version, sha256, author_id, saved_at,
    visibility, convention, fields, body, search, current)
  select workspace_id, path, 1, sha256, author_id, saved_at, visibility, convention, fields, body,
    to_tsvector('pg_catalog.english', search_text), true
  from input
)
insert into listings (listing_id, workspace_id, path, kind, author_id, created_at, saved_at,
  convention, search, field_terms)
select listing_id, workspace_id, path, kind, author_id, saved_at, saved_at, convention,
  to_tsvector('pg_catalog.english', search_text), store_field_terms(fields) from input
where kind is not null`;

/**
 * Workspaces of the owners (agents that exist; every third private, the first few the reader's),
 * then INDEXED_FILES files in batches, then statistics. Answers how many of the files are
 * listings, and how many are in the reader's workspaces.
 */
export async function loadIndexFixture(
  driver: Driver,
  owners: readonly string[],
  reader: string,
): Promise<{ listings: number; readerFiles: number }> {
  const random = randomSource(9);
  const workspaces: Workspace[] = Array.from({ length: WORKSPACES }, (_, i) => ({
    workspace_id: randomUUID(),
    owner: i < READER_WORKSPACES ? reader : (owners[i % owners.length] as string),
    visibility: i % PRIVATE_EVERY === 0 ? 'private' : 'public',
    files: 0,
  }));
  await driver.query(
    `with input as (
       select * from jsonb_to_recordset($1::text::jsonb)
         as r(workspace_id uuid, owner uuid, visibility text)
     ), made as (
       insert into workspaces (workspace_id, owner_agent_id, visibility, name)
       select workspace_id, owner, visibility, 'bench ' || workspace_id from input
     )
     insert into workspace_members (workspace_id, agent_id, role)
     select workspace_id, owner, 'owner' from input`,
    [JSON.stringify(workspaces)],
  );
  let listings = 0;
  for (let first = 0; first < INDEXED_FILES; first += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, INDEXED_FILES - first) }, (_, k) =>
      fixtureFile(first + k, workspaces, random),
    );
    listings += batch.filter((file) => file.kind !== null).length;
    await driver.query(LOAD_BATCH, [JSON.stringify(batch), CONTENT_TYPE]);
  }
  await driver.query('analyze');
  const readerFiles = workspaces
    .filter((workspace) => workspace.owner === reader)
    .reduce((sum, workspace) => sum + workspace.files, 0);
  return { listings, readerFiles };
}

/** Nearest-rank percentile (no interpolation), so each figure is a latency that happened. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
}

/** One path of one query: how to run it (answering its row count, if any) and what it measured. */
interface Lane {
  path: IndexSqlPath;
  run: () => Promise<number | undefined>;
  samples: number[];
  failures: number;
  rows?: number;
  firstError?: string;
}

async function timeOnce(lane: Lane): Promise<void> {
  const started = performance.now();
  try {
    lane.rows = await lane.run();
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

/** The direct SQL's parameters: the reader's agent id where it names `$1`. */
function directParams(query: QueryCase, principal: Principal): string[] {
  return query.direct.includes('$1') ? [principal.agentId] : [];
}

function lanesFor(services: Services, principal: Principal, query: QueryCase, wrapped: string) {
  const { driver } = services;
  const lane = (path: IndexSqlPath, run: () => Promise<number | undefined>): Lane => ({
    path,
    run,
    samples: [],
    failures: 0,
  });
  return [
    lane('sandbox: runIndexQuery', async () => {
      const answer = await runIndexQuery(services, principal, {
        sql: query.sandbox,
        scope: query.scope,
      });
      return answer.rows.length;
    }),
    // What runIndexQuery runs once its policy check has answered, on the same transaction.
    lane('sandbox SQL, policy check skipped', async () => {
      const table = await driver.transaction(
        async (tx) => {
          await tx.query(bindScope(services.indexReaderRole), [principal.agentId]);
          return tx.queryTable(wrapped);
        },
        { readOnly: true, timeoutMs: sqlTimeoutMs(services), pool: 'agents' },
      );
      return table.rows.length;
    }),
    lane('direct SQL on the tables', async () => {
      const table = await driver.transaction(
        (tx) => tx.queryTable(query.direct, directParams(query, principal)),
        { readOnly: true },
      );
      return table.rows.length;
    }),
    // Pure CPU in this process: the share of the overhead no plan can change.
    lane('policy check alone: checkUserSql', async () => {
      await checkUserSql(query.sandbox);
      return undefined;
    }),
  ];
}

/** EXPLAIN ANALYZE of the wrapped text (bound as the sandbox binds it) and of the direct SQL. */
async function explain(
  services: Services,
  principal: Principal,
  query: QueryCase,
  wrapped: string,
  log: (line: string) => void,
): Promise<void> {
  const plan = async (title: string, text: string, bound: boolean) => {
    const rows = await services.driver.transaction(
      async (tx) => {
        if (bound) await tx.query(bindScope(services.indexReaderRole), [principal.agentId]);
        return tx.queryTable(
          `explain (analyze, buffers) ${text}`,
          bound ? [] : directParams(query, principal),
        );
      },
      { readOnly: true },
    );
    log(`${services.driver.kind} ${query.query}, ${title}:`);
    for (const [line] of rows.rows) log(`  ${String(line)}`);
  };
  await plan('sandbox text as run', wrapped, true);
  await plan('direct SQL', query.direct, false);
}

function summary(driver: DriverKind, query: IndexSqlQuery, lane: Lane): IndexSqlFigure {
  const sorted = [...lane.samples].sort((a, b) => a - b);
  return {
    driver,
    query,
    path: lane.path,
    count: sorted.length,
    failures: lane.failures,
    p50Ms: percentile(sorted, 0.5),
    p95Ms: percentile(sorted, 0.95),
    maxMs: sorted.at(-1) ?? 0,
    ...(lane.rows === undefined ? {} : { rows: lane.rows }),
    ...(lane.firstError ? { firstError: lane.firstError } : {}),
  };
}

/**
 * Why this driver cannot be measured here, or null. The test server runs on PostgreSQL whenever
 * DATABASE_URL is set, so PGlite needs it unset (BENCH_DATABASE_URL serves the bench instead).
 */
export function indexSqlSkipReason(kind: DriverKind, options: IndexSqlOptions): string | null {
  if (kind === 'postgres' && !options.databaseUrl) {
    return 'neither BENCH_DATABASE_URL nor DATABASE_URL is set';
  }
  if (kind === 'pglite' && TEST_DATABASE_URL) {
    return 'DATABASE_URL sends every test server to PostgreSQL; set BENCH_DATABASE_URL instead';
  }
  return null;
}

async function startServer(
  kind: DriverKind,
  options: IndexSqlOptions,
  serverLog: (message: string) => void,
): Promise<{ server: TestServer; drop: () => Promise<void> }> {
  if (kind === 'pglite') {
    return { server: await startBenchServer({ log: serverLog }), drop: async () => undefined };
  }
  const scratch = await scratchDatabase(options.databaseUrl as string);
  try {
    const server = await startBenchServer({ databaseUrl: scratch.url, log: serverLog });
    return { server, drop: scratch.drop };
  } catch (error) {
    await scratch.drop();
    throw error;
  }
}

/**
 * On one driver: a real server on a fresh database, agents signed up over HTTP, the fixture,
 * then each query's paths in turn. Figures go to `sink` as each query ends, so a run cut
 * short still prints what it measured.
 */
export async function measureIndexSql(
  kind: DriverKind,
  options: IndexSqlOptions,
  signal: AbortSignal,
  sink: IndexSqlSink,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<void> {
  const { server, drop } = await startServer(kind, options, serverLog);
  try {
    const { services } = server;
    if (services.driver.kind !== kind) {
      throw new Error(`the test server runs on ${services.driver.kind}, not ${kind}`);
    }
    const owners: string[] = [];
    for (let i = 0; i < OWNERS; i++)
      owners.push((await server.signUp(`bench owner ${i}`)).agent_id);
    const reader = await server.signUp('bench reader');
    const row = await findAgent(services.driver, reader.agent_id);
    if (!row) throw new Error('the reader signed up but is not there');
    const principal = principalOf(row);

    const started = performance.now();
    const { listings, readerFiles } = await loadIndexFixture(
      services.driver,
      owners,
      reader.agent_id,
    );
    const loadSeconds = (performance.now() - started) / 1000;
    log(
      `${kind}: ${INDEXED_FILES.toLocaleString('en-US')} indexed files in ${loadSeconds.toFixed(1)} s`,
    );
    sink.fixture({
      driver: kind,
      files: INDEXED_FILES,
      listings,
      workspaces: WORKSPACES,
      privateWorkspaces: Math.ceil(WORKSPACES / PRIVATE_EVERY),
      readerFiles,
      cities: CITIES.length,
      words: WORDS.length,
      loadSeconds,
      sqlTimeoutMs: sqlTimeoutMs(services),
    });

    for (const query of INDEX_SQL_QUERIES) {
      if (signal.aborted) return;
      // The first of each query goes through the door, cold: what the first agent to ask gets.
      const door = await server.post(
        '/index/sql',
        { sql: query.sandbox, scope: query.scope },
        reader.api_token,
      );
      if (door.status !== 200) {
        const { code } = (await door.json()) as { code?: string };
        sink.note(
          `index SQL, ${kind} ${query.query}: the first query, over HTTP, answered ${door.status} (${code})`,
        );
      }
      const wrapped = scopedQuery(
        (await checkUserSql(query.sandbox)).text,
        query.scope,
        INDEX_ROW_CAP,
      );
      if (options.explain) await explain(services, principal, query, wrapped, log);
      const lanes = lanesFor(services, principal, query, wrapped);
      const warmUpStarted = performance.now();
      let healthy = await rounds(lanes, WARM_UP_ROUNDS, signal);
      const roundMs = (performance.now() - warmUpStarted) / WARM_UP_ROUNDS;
      const measured = Math.max(
        MIN_ROUNDS,
        Math.min(options.rounds, Math.floor(QUERY_BUDGET_MS / Math.max(roundMs, 0.001))),
      );
      // Warm-up failures count only when they stopped the warm-up.
      for (const lane of lanes) {
        lane.samples = [];
        if (healthy) {
          lane.failures = 0;
          delete lane.firstError;
        }
      }
      if (healthy) healthy = await rounds(lanes, measured, signal);
      for (const lane of lanes) sink.figure(summary(kind, query.query, lane));
      log(
        `${kind} ${query.query}: ${lanes[0]?.samples.length ?? 0} rounds` +
          (healthy ? '' : ` (stopped: a path failed ${MAX_FAILURES} times)`),
      );
    }
  } finally {
    await server.close();
    await drop();
  }
}
