/**
 * The write path, in-process: commands per second through `registry.command` (pinned actor,
 * mailbox, one transaction with the version check, memory and pushes after the commit), beside
 * the same SQL statements run as one raw transaction without the registry, on the same driver
 * (and, on PostgreSQL, through postgres.js `sql.begin` directly). No HTTP: the figure is the
 * write path alone.
 *
 * Each path writes to agents of its own (so none finds another's writes under its copy), and
 * the paths take turns in rounds: on a shared machine whose load comes and goes, each path
 * gets its share of good and bad moments, and the ratios between them hold better.
 */
import { CAPABILITIES } from '../actors/capabilities.ts';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { leaveFeedback } from '../actors/feedback/handlers.ts';
import { signUp } from '../actors/agents/handlers.ts';
import { readFeedPage } from '../actors/feed/feed.ts';
import { ensureOperator } from '../actors/agents/operator.ts';
import { principalOf, type Principal } from '../actors/kernel/principal.ts';
import { Services } from '../actors/kernel/services.ts';
import { agentCodec } from '../machines/agent.ts';
import { notifyActors } from '../storage/kernel/actor-notices.ts';
import { findAgent, saveAgentState } from '../storage/agents/agents.ts';
import { appendChanges, readChanges } from '../storage/kernel/changes.ts';
import type { Driver, Queryable, Row } from '../storage/driver.ts';
import { insertFeedback } from '../storage/feedback.ts';
import { openPglite } from '../storage/pglite/driver.ts';
import { openPostgres } from '../storage/postgres/driver.ts';
import { freshPgliteDir } from '../test/helpers/storage.ts';
import { bounded } from './clients.ts';
import { ClosedLoop, type LoopResult } from './closed-loop.ts';
import { scratchDatabase } from './scratch-database.ts';

export type DriverKind = 'pglite' | 'postgres';

/**
 * - `feed.read`: `readFeedPage` with limit 1 (what `GET /changes` runs): reads the next change
 *   and moves the agent's remembered place past it, so every command writes the agent's row.
 * - `feedback`: what `POST /feedback` with a token runs on the sender: the feedback row and two
 *   change rows (the operator's feed and the sender's), the actor's row left alone.
 */
export type CommandKind = 'feed.read' | 'feedback';

export type WritePath = 'registry.command' | 'raw driver transaction' | 'raw postgres.js sql.begin';

export interface CommandFigure {
  driver: DriverKind;
  command: CommandKind;
  actors: number;
  path: WritePath;
  result: LoopResult;
}

export interface CommandBenchOptions {
  /** Agents the spread-out cases cover (signed up first). */
  actors: number;
  /** Measured commands per case. */
  commands: number;
  /** Commands in flight at once (a closed loop, like that many busy connections). */
  concurrency: number;
  /** PostgreSQL server URL; a scratch database is made on it and dropped after. */
  databaseUrl?: string;
}

/** Commands before each measured one-actor case: JIT, prepared statements, caches. */
const WARM_UP_ONE_ACTOR = 200;
/** Rounds each case is measured in, the paths taking turns. */
const ROUNDS = 4;
const SET_UP_CONCURRENCY = 20;

/** What the raw paths keep of an actor, in place of the registry: its row's version and place. */
interface RawActor {
  version: number;
  readSeq: number;
  /** The minimal mailbox: one transaction at a time per actor, as the registry runs them. */
  tail: Promise<unknown>;
}

/** The agents one path writes to: one alone, and the crowd the spread-out cases cover. */
interface Agents {
  solo: string;
  crowd: string[];
}

/** One driver's world: the service's Services on it, the agents, and the raw handles. */
interface World {
  kind: DriverKind;
  driver: Driver;
  services: Services;
  agents: Map<WritePath, Agents>;
  principals: Map<string, Principal>;
  /** postgres.js on the same database, with the driver's own settings (PostgreSQL only). */
  sql: postgres.Sql | null;
  close(): Promise<void>;
}

async function openWorld(
  kind: DriverKind,
  paths: readonly WritePath[],
  options: CommandBenchOptions,
  log: (line: string) => void,
): Promise<World> {
  let driver: Driver;
  let sql: postgres.Sql | null = null;
  let drop = async (): Promise<void> => undefined;
  if (kind === 'pglite') driver = await openPglite(await freshPgliteDir());
  else {
    if (!options.databaseUrl) throw new Error('no PostgreSQL URL');
    const scratch = await scratchDatabase(options.databaseUrl);
    drop = scratch.drop;
    driver = await openPostgres(scratch.url);
    // The same settings as storage/postgres/driver.ts, so only the driver's wrapper differs.
    sql = postgres(scratch.url, {
      max: 10,
      prepare: true,
      onnotice: () => undefined,
      types: { bigint: { to: 20, from: [20], serialize: String, parse: Number } },
    });
  }
  const services = new Services(
    driver,
    {
      baseUrl: 'http://127.0.0.1:0',
      operatorName: 'service',
      termsUrl: 'http://127.0.0.1:0/terms',
      privacyUrl: 'http://127.0.0.1:0/privacy',
      mailJoinAddress: 'join@127.0.0.1',
      actorCapacity: Math.max(10_000, paths.length * (options.actors + 1) + 10),
    },
    CAPABILITIES,
  );
  const close = async () => {
    await services.flush().catch(() => undefined);
    await sql?.end({ timeout: 5 });
    await driver.close();
    await drop();
  };
  try {
    // As server/app.ts starts the service: the operator first, then word from other processes.
    await ensureOperator(services, undefined);
    await services.listenToOtherProcesses();
    const started = performance.now();
    const call = { services, principal: null, signal: new AbortController().signal };
    const perPath = options.actors + 1;
    const ids = await bounded(paths.length * perPath, SET_UP_CONCURRENCY, async (i) => {
      const { agent_id } = await signUp(call, { name: `bench writer ${i}` });
      return agent_id;
    });
    log(
      `${kind}: signed up ${ids.length} agents in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const principals = new Map<string, Principal>();
    for (const id of ids) {
      const row = await findAgent(driver, id);
      if (row) principals.set(id, principalOf(row));
    }
    const agents = new Map<WritePath, Agents>();
    paths.forEach((path, k) => {
      const [solo, ...crowd] = ids.slice(k * perPath, (k + 1) * perPath);
      if (!solo) throw new Error('no agents signed up');
      agents.set(path, { solo, crowd });
    });
    return { kind, driver, services, agents, principals, sql, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/**
 * Records `perAgent` changes in each agent's feed in one statement, so every `feed.read` command
 * has a change to read and a place to move past.
 */
async function fillFeeds(driver: Driver, agentIds: readonly string[], perAgent: number) {
  await driver.query(
    `with heads as (
       update feed_heads set last_seq = last_seq + $2
       where agent_id = any($1::uuid[]) returning agent_id, last_seq
     )
     insert into changes (agent_id, seq, event_id, type, data)
     select heads.agent_id, seq, gen_random_uuid(), 'bench.filler', '{"bench": true}'::jsonb
     from heads, generate_series(heads.last_seq - $2 + 1, heads.last_seq) as seq`,
    [agentIds, perAgent],
  );
}

/** A Queryable over a postgres.js transaction, as the driver's own, minus its guard and errors. */
function bare(tx: postgres.TransactionSql): Queryable {
  return {
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const rows = await tx.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
        prepare: true,
      });
      return rows as unknown as T[];
    },
    async script(text: string) {
      await tx.unsafe(text).simple();
    },
  };
}

/** A persisted agent snapshot as the actor writes it, with `readSeq` put in. */
const persistedTemplate = agentCodec.persist(agentCodec.start({ readSeq: 0 })) as unknown as {
  context: Record<string, unknown>;
} & Record<string, unknown>;
const persistedAt = (readSeq: number) => ({
  ...persistedTemplate,
  context: { ...persistedTemplate.context, readSeq },
});

type RunTransaction = <T>(work: (tx: Queryable) => Promise<T>) => Promise<T>;

/** The raw paths: the registry's SQL, in one transaction, with only a per-actor queue around it. */
class RawWriter {
  private readonly actors = new Map<string, RawActor>();
  /** Names this writer in its notifications, as a Services instance does. */
  private readonly instance = randomUUID();

  constructor(
    private readonly world: World,
    private readonly transaction: RunTransaction,
  ) {}

  /** Takes each actor's version and place from the database (earlier cases moved them). */
  async load(agentIds: readonly string[]): Promise<void> {
    this.actors.clear();
    for (const id of agentIds) {
      const row = await findAgent(this.world.driver, id);
      if (!row) throw new Error(`agent ${id} is missing`);
      const saved = row.machine as { context?: { readSeq?: number } } | null;
      const readSeq = saved?.context?.readSeq ?? row.readSeq;
      this.actors.set(id, { version: row.version, readSeq, tail: Promise.resolve() });
    }
  }

  private queue<T>(id: string, work: (actor: RawActor) => Promise<T>): Promise<T> {
    const actor = this.actors.get(id);
    if (!actor) throw new Error(`agent ${id} was not loaded`);
    const run = actor.tail.then(() => work(actor));
    actor.tail = run.catch(() => undefined);
    return run;
  }

  /** readChanges, saveAgentState and (PostgreSQL) the actor notice: what readFeedPage runs. */
  readFeed(id: string): Promise<boolean> {
    const notifies = Boolean(this.world.driver.listen);
    return this.queue(id, async (actor) => {
      const moved = await this.transaction(async (tx) => {
        const [row] = await readChanges(tx, id, actor.readSeq, 1);
        if (!row) return null;
        const version = await saveAgentState(tx, id, actor.version, persistedAt(row.seq));
        if (version === null) throw new Error(`agent ${id} moved under the raw writer`);
        if (notifies) await notifyActors(tx, this.instance, [{ kind: 'agent', id, version }]);
        return { version, seq: row.seq };
      });
      if (!moved) return false;
      actor.version = moved.version;
      actor.readSeq = moved.seq;
      return true;
    });
  }

  /** insertFeedback, the two change rows and (PostgreSQL) their notice: what POST /feedback runs. */
  feedback(id: string): Promise<boolean> {
    const notifies = Boolean(this.world.driver.listen);
    const principal = this.world.principals.get(id);
    if (!principal) throw new Error(`agent ${id} has no principal`);
    const operatorId = this.world.services.operatorId;
    return this.queue(id, async () => {
      const feedbackId = randomUUID();
      await this.transaction(async (tx) => {
        await insertFeedback(tx, {
          feedbackId,
          agentId: id,
          category: 'other',
          message: FEEDBACK.message,
        });
        await appendChanges(
          tx,
          [
            {
              agentId: operatorId,
              type: 'feedback.submitted',
              actor: principal.agent,
              data: {
                feedback_id: feedbackId,
                category: 'other',
                message: FEEDBACK.message,
                anonymous: false,
              },
            },
            {
              agentId: id,
              type: 'feedback.received',
              actor: principal.agent,
              data: { feedback_id: feedbackId, category: 'other', note: FEEDBACK_NOTE },
            },
          ],
          undefined,
          false,
          // As the service: other processes told by the same statement (one round trip).
          notifies ? { sender: this.instance, also: [] } : undefined,
        );
      });
      return true;
    });
  }
}

const FEEDBACK = { message: 'bench: the write path', category: 'other' } as const;
const FEEDBACK_NOTE = 'The operator reads feedback; an answer arrives here as feedback.answered.';

/** The operation one path runs for one command kind, on one agent. */
function operationFor(
  world: World,
  command: CommandKind,
  path: WritePath,
  raw: RawWriter | null,
): (agentId: string) => Promise<boolean> {
  const { services } = world;
  if (path === 'registry.command') {
    if (command === 'feed.read') {
      return async (id) => (await readFeedPage(services, id, undefined, 1)).changes.length > 0;
    }
    const signal = new AbortController().signal;
    return async (id) => {
      const principal = world.principals.get(id) ?? null;
      await leaveFeedback({ services, principal, signal }, FEEDBACK);
      return true;
    };
  }
  if (!raw) throw new Error(`${path} needs a raw writer`);
  return command === 'feed.read' ? (id) => raw.readFeed(id) : (id) => raw.feedback(id);
}

function rawWriter(world: World, path: WritePath): RawWriter | null {
  if (path === 'raw driver transaction') {
    return new RawWriter(world, (work) => world.driver.transaction((tx) => work(tx)));
  }
  if (path === 'raw postgres.js sql.begin') {
    const { sql } = world;
    if (!sql) throw new Error('raw postgres.js needs PostgreSQL');
    return new RawWriter(world, (work) => sql.begin((tx) => work(bare(tx))) as never);
  }
  return null;
}

/** One path's share of a case: its agents, its operation, and its figures so far. */
interface Lane {
  path: WritePath;
  agents: string[];
  run: (agentId: string) => Promise<boolean>;
  /** Round-robin over `agents`, carried on from round to round. */
  turn: number;
  loop: ClosedLoop;
}

/**
 * Every case on one driver: each command kind, on one actor and spread over the crowd, each
 * path measured in ROUNDS rounds, the paths taking turns (and a different one first each round).
 * Figures go to `record` as each case ends, so a run cut short still prints what it measured.
 */
export async function measureCommands(
  kind: DriverKind,
  options: CommandBenchOptions,
  signal: AbortSignal,
  record: (figure: CommandFigure) => void,
  log: (line: string) => void,
): Promise<void> {
  const paths: WritePath[] = ['registry.command', 'raw driver transaction'];
  if (kind === 'postgres') paths.push('raw postgres.js sql.begin');
  const world = await openWorld(kind, paths, options, log);
  try {
    const perRound = Math.ceil(options.commands / ROUNDS);
    const measured = perRound * ROUNDS;
    for (const { solo, crowd } of world.agents.values()) {
      // Enough changes for every feed.read, warm-ups included (feedback adds more).
      await fillFeeds(world.driver, [solo], WARM_UP_ONE_ACTOR + measured + 1);
      await fillFeeds(world.driver, crowd, 1 + Math.ceil(measured / crowd.length) + 1);
    }
    for (const command of ['feed.read', 'feedback'] as const) {
      for (const spread of [false, true]) {
        if (signal.aborted) return;
        const lanes: Lane[] = [];
        for (const path of paths) {
          const { solo, crowd } = world.agents.get(path) as Agents;
          const agents = spread ? crowd : [solo];
          const raw = rawWriter(world, path);
          await raw?.load(agents);
          const lane: Lane = {
            path,
            agents,
            run: operationFor(world, command, path, raw),
            turn: 0,
            loop: new ClosedLoop(),
          };
          lanes.push(lane);
          // Warm-up: every actor once (loaded into the registry), and at least WARM_UP_ONE_ACTOR.
          const warmUp = new ClosedLoop();
          await warmUp.run(
            Math.max(agents.length, WARM_UP_ONE_ACTOR),
            options.concurrency,
            () => next(lane),
            signal,
          );
          warmUp.finish();
        }
        for (let round = 0; round < ROUNDS; round++) {
          for (let k = 0; k < lanes.length; k++) {
            const lane = lanes[(round + k) % lanes.length] as Lane;
            await lane.loop.run(perRound, options.concurrency, () => next(lane), signal);
          }
        }
        for (const lane of lanes) {
          const result = lane.loop.finish();
          record({ driver: kind, command, actors: lane.agents.length, path: lane.path, result });
        }
      }
    }
  } finally {
    await world.close();
  }
}

/** The lane's next command, on the next of its agents in turn. */
function next(lane: Lane): Promise<boolean> {
  const agentId = lane.agents[lane.turn++ % lane.agents.length] as string;
  return lane.run(agentId);
}
