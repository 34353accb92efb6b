import { randomUUID } from 'node:crypto';
import {
  ACTOR_CHANNEL,
  notifyActors,
  parseActorNotice,
  TOKEN_NOTICE_KIND,
} from '../../storage/kernel/actor-notices.ts';
import {
  appendChanges,
  CHANGES_CHANNEL,
  notifyChanges,
  type StoredChangeRow,
} from '../../storage/kernel/changes.ts';
import { lockAgent } from '../../storage/agents.ts';
import { lockWorkspace } from '../../storage/workspaces.ts';
import { lockConvention } from '../../storage/conventions.ts';
import { loadConventionActor, type ConventionActor } from '../conventions/actor.ts';
import { loadDealActor, type DealActor } from '../deals/actor.ts';
import { lockDeal } from '../../storage/deals.ts';
import type { Driver, Queryable, Transaction } from '../../storage/driver.ts';
import { loadAgentActor, type AgentActor } from '../agents/actor.ts';
import { ChangeHub } from './change-hub.ts';
import type { SigningKeys } from '../receipts/signing-keys.ts';
import type { StorageLinks } from '../files/storage-links.ts';
import type { BlobStore } from '../../storage/blobs/blob-store.ts';
import { realClock, type Clock } from './clock.ts';
import { currentUnit, type CommitWork } from './commit.ts';
import { ActorRegistry } from './registry.ts';
import { loadWorkspaceActor, type WorkspaceActor } from '../workspaces/actor.ts';
import { TokenResolver } from './token-resolver.ts';

export interface ServiceConfig {
  baseUrl: string;
  operatorName: string;
  termsUrl: string;
  privacyUrl: string;
  mailJoinAddress: string;
  /** Live actors of each kind kept in memory at most. */
  actorCapacity: number;
  /** Time for the long-poll waits; the real clock when unset. */
  clock?: Clock;
  /** Bytes one agent may hold, every kept byte counted (default 1 GiB; actors/files/quota.ts). */
  storageQuotaBytes?: number;
  /** The time limit of one index SQL query; unset or 0: 2 s on PostgreSQL, 0.5 s on PGlite. */
  sqlTimeoutMs?: number;
  /** Index queries past that limit allowed a minute (actors/index/sql-timeout-budget.ts). */
  sqlTimeoutLimits?: { perAgent: number; total: number };
  /** Terms the store refuses in listings and conventions (STORE_DENY_TERMS). */
  storeDenyTerms?: readonly string[];
  /** Conventions one agent may register in all (CONVENTIONS_PER_AGENT; default 20, 0: none). */
  conventionsPerAgent?: number;
}

/** What files need: where bytes live and what signs receipts (made at start-up). */
export interface FileServices {
  blobs: BlobStore;
  signingKeys: SigningKeys;
  /** Signs and checks storage links. */
  links: StorageLinks;
}

/**
 * What the operation handlers share: storage, the change hub, the actor registries and config.
 * Made once per server process.
 */
export class Services {
  readonly hub: ChangeHub;
  readonly agents: ActorRegistry<AgentActor>;
  readonly workspaces: ActorRegistry<WorkspaceActor>;
  readonly conventions: ActorRegistry<ConventionActor>;
  readonly deals: ActorRegistry<DealActor>;
  /** Time for everything that expires or waits; tests pass a TestClock. */
  readonly clock: Clock;
  readonly storageQuotaBytes: number;
  /** PGlite has one connection that writes wait behind: user SQL gets a shorter leash there. */
  readonly sqlTimeoutMs: number;
  /** Whether agents' SQL runs as the reader role (start-up checks; see checkIndexReaderRole). */
  indexReaderRole = false;
  /** PostgreSQL: the agents' pool logs in as a reader role of its own (no role to switch). */
  indexReaderLogin = false;
  #files: FileServices | undefined;
  readonly tokens: TokenResolver;
  /** This process, as named in its notifications to other processes. */
  private readonly instance = randomUUID();
  /** The operator agent's id; set at start-up by ensureOperator, before any request. */
  operatorId = '';

  constructor(
    readonly driver: Driver,
    readonly config: ServiceConfig,
  ) {
    this.clock = config.clock ?? realClock;
    this.storageQuotaBytes = config.storageQuotaBytes ?? 1024 ** 3;
    this.sqlTimeoutMs = config.sqlTimeoutMs || (driver.kind === 'pglite' ? 500 : 2000);
    this.hub = new ChangeHub(this.clock);
    this.agents = new ActorRegistry<AgentActor>({
      kind: 'agent',
      load: async (agentId, db) => {
        const actor = await loadAgentActor(db, agentId);
        if (actor) this.hub.seedHead(agentId, actor.lastSeqAtLoad);
        return actor;
      },
      lock: (agentId, tx) => lockAgent(tx, agentId),
      db: () => this.db(),
      commit: (work) => this.commit(work),
      capacity: config.actorCapacity,
      onEvict: (agentId) => this.hub.forget(agentId),
    });
    this.workspaces = new ActorRegistry<WorkspaceActor>({
      kind: 'workspace',
      load: (workspaceId, db) => loadWorkspaceActor(db, workspaceId),
      lock: (workspaceId, tx) => lockWorkspace(tx, workspaceId),
      // Joins and invites decide from the members in memory: check the copy before deciding.
      lockFirst: true,
      db: () => this.db(),
      commit: (work) => this.commit(work),
      capacity: config.actorCapacity,
    });
    this.conventions = new ActorRegistry<ConventionActor>({
      kind: 'convention',
      load: (name, db) => loadConventionActor(db, name),
      lock: (name, tx) => lockConvention(tx, name),
      db: () => this.db(),
      commit: (work) => this.commit(work),
      capacity: config.actorCapacity,
    });
    this.deals = new ActorRegistry<DealActor>({
      kind: 'deal',
      load: (dealId, db) => loadDealActor(db, dealId),
      lock: (dealId, tx) => lockDeal(tx, dealId),
      // Agreements decide from the machine in memory: check the copy before deciding.
      lockFirst: true,
      db: () => this.db(),
      commit: (work) => this.commit(work),
      capacity: config.actorCapacity,
    });
    this.tokens = new TokenResolver(() => this.db());
  }

  /** The blob store and receipt keys; start-up provides them before any request. */
  get files(): FileServices {
    if (!this.#files) throw new Error('file services were not provided at start-up');
    return this.#files;
  }

  provideFiles(files: FileServices): void {
    this.#files = files;
  }

  /**
   * Where reads go: the open transaction of the request's unit of work (PGlite has one
   * connection, which that transaction holds), or the driver.
   */
  db(): Queryable {
    const unit = currentUnit();
    return unit?.isOpen ? unit.reader() : this.driver;
  }

  /**
   * The write path (ARCHITECTURE.md, "A write, end to end"): `work` runs in one transaction
   * with the change rows it returns; only after the commit does memory catch up
   * (`afterCommit`) and are the changes pushed. If anything fails, nothing is written and
   * nothing is pushed. Inside a request's unit of work, `work` is a savepoint of the unit's
   * transaction and the after-commit steps wait for the unit to commit.
   */
  async commit<R>(work: (tx: Transaction) => Promise<CommitWork<R>>): Promise<R> {
    const record = async (tx: Transaction) => {
      const outcome = await work(tx);
      const stored = await appendChanges(tx, outcome.changes ?? []);
      if (this.driver.listen) {
        await notifyChanges(tx, this.instance, stored);
        await notifyActors(tx, this.instance, outcome.notices ?? []);
      }
      return { outcome, stored };
    };
    const unit = currentUnit();
    if (unit) {
      const { outcome, stored } = await unit.step(record);
      unit.onCommit(() => this.afterCommit(outcome, stored));
      return outcome.result;
    }
    const { outcome, stored } = await this.driver.transaction(record);
    this.afterCommit(outcome, stored);
    return outcome.result;
  }

  private afterCommit(outcome: CommitWork<unknown>, stored: StoredChangeRow[]): void {
    outcome.afterCommit?.();
    this.hub.publish(stored);
  }

  /**
   * Hears of commits by other processes on the same database: their changes wake sockets and
   * waiters here, and their actor versions make copies here stale. A lost notification costs
   * latency (readers re-read; a stale copy fails its version check and reloads), never data.
   */
  async listenToOtherProcesses(): Promise<void> {
    await this.driver.listen?.(CHANGES_CHANNEL, (payload) => {
      const [sender, agentId, seq] = payload.split(' ');
      if (sender === this.instance || !agentId || !seq) return;
      this.hub.signal(agentId, Number(seq));
    });
    await this.driver.listen?.(ACTOR_CHANNEL, (payload) => {
      const notice = parseActorNotice(payload);
      if (!notice || notice.sender === this.instance) return;
      if (notice.kind === 'agent') this.agents.invalidate(notice.id, notice.version);
      if (notice.kind === 'workspace') this.workspaces.invalidate(notice.id, notice.version);
      if (notice.kind === 'convention') this.conventions.invalidate(notice.id, notice.version);
      if (notice.kind === 'deal') this.deals.invalidate(notice.id, notice.version);
      if (notice.kind === TOKEN_NOTICE_KIND) this.tokens.forgetAgent(notice.id);
    });
  }

  /** Tells other processes that an agent's tokens changed, inside the transaction that did it. */
  async noticeTokenChange(tx: Queryable, agentId: string): Promise<void> {
    if (!this.driver.listen) return;
    await notifyActors(tx, this.instance, [{ kind: TOKEN_NOTICE_KIND, id: agentId, version: 0 }]);
  }

  /** Whether the database answers now (for /health). */
  async databaseReachable(): Promise<boolean> {
    return this.driver.ping().then(
      () => true,
      () => false,
    );
  }

  /** Lets go of every actor after their mailboxes drain. */
  async flush(): Promise<void> {
    await Promise.all([
      this.agents.flush(),
      this.workspaces.flush(),
      this.conventions.flush(),
      this.deals.flush(),
    ]);
    this.agents.clear();
    this.workspaces.clear();
    this.conventions.clear();
    this.deals.clear();
  }
}
