import { randomUUID } from 'node:crypto';
import {
  ACTOR_CHANNEL,
  actorNotifications,
  notifyActors,
  parseActorNotice,
  TOKEN_NOTICE_KIND,
} from '../../storage/kernel/actor-notices.ts';
import {
  appendChanges,
  CHANGES_CHANNEL,
  parseChangeNotification,
  type StoredChangeRow,
} from '../../storage/kernel/changes.ts';
import { notifyAll } from '../../storage/kernel/notifications.ts';
import type { Driver, Queryable, Transaction } from '../../storage/driver.ts';
import type { AccountSection } from './account-sections.ts';
import type { Capability } from './capability.ts';
import { AgentCounts, COUNTS_NOTICE_KIND, type AccountCounts } from './agent-counts.ts';
import { ChangeHub } from './change-hub.ts';
import { realClock, type Clock } from './clock.ts';
import { assertChangesDeclared, currentUnit, type CommitWork } from './commit.ts';
import { ActorRegistry } from './registry.ts';
import { RequestSignatures } from './request-signatures.ts';
import { TokenResolver } from './token-resolver.ts';
import type { ScopeTarget } from './token-scope.ts';

export interface ServiceConfig {
  baseUrl: string;
  operatorName: string;
  termsUrl: string;
  privacyUrl: string;
  /** Where the embedded database (`pglite/`) and the file system's blobs (`blobs/`) live. */
  dataDir?: string;
  /** Live actors of each kind kept in memory at most. */
  actorCapacity: number;
  /** Time for the long-poll waits; the real clock when unset. */
  clock?: Clock;
  /** Refuse what the protocol's tables do not declare (server/config.ts, strictProtocol). */
  strictProtocol?: boolean;
}

/**
 * What the operation handlers share: storage, the change hub, one actor registry per actor kind
 * of the capabilities, what capabilities provide at start-up, and config. Made once per server
 * process.
 *
 * Capabilities add their own members to this interface by declaration merging (as Fastify's
 * decorators do): a capability with actors declares `readonly workspaces: ActorRegistry<...>`
 * beside its `ActorKind`, and one that provides a service at start-up (`provide`) declares it
 * the same way. The kernel never names a capability.
 */
export class Services {
  readonly hub: ChangeHub;
  /** The registry of each actor kind, by `kind` (the notices other processes send name it). */
  readonly #registries = new Map<string, ActorRegistry<never>>();
  /** Time for everything that expires or waits; tests pass a TestClock. */
  readonly clock: Clock;
  readonly tokens: TokenResolver;
  /** Agents' signing keys, as signed requests are verified against them (RFC 9421). */
  readonly signatures: RequestSignatures;
  /**
   * Each agent's account figures (`whoami`) as last computed; forgotten after every commit that
   * changes them, here or in another process (agent-counts.ts).
   */
  readonly counts: AgentCounts<AccountCounts>;
  /** The capabilities' parts of the caller's account, in the order of the list (account-sections.ts). */
  readonly accountSections: readonly AccountSection[];
  /** The capabilities' checks of token scopes that name their things (token-scope.ts). */
  readonly scopeTargets: readonly ScopeTarget[];
  /** This process, as named in its notifications to other processes. */
  private readonly instance = randomUUID();
  /** The operator agent's id; set at start-up by ensureOperator, before any request. */
  operatorId = '';
  readonly #stopping = new AbortController();
  /**
   * Aborted when the process begins to stop: what waits for news (a parked long-poll) answers
   * at once with what it has, so the caller asks again, of another process.
   */
  readonly stopping: AbortSignal = this.#stopping.signal;

  constructor(
    readonly driver: Driver,
    readonly config: ServiceConfig,
    capabilities: readonly Capability[],
  ) {
    this.clock = config.clock ?? realClock;
    this.hub = new ChangeHub(this.clock);
    this.counts = new AgentCounts(config.actorCapacity);
    for (const capability of capabilities) {
      for (const actorKind of capability.actors ?? []) {
        if (this.#registries.has(actorKind.kind) || actorKind.registry in this) {
          throw new Error(`Two actor kinds are named ${actorKind.kind} (${actorKind.registry}).`);
        }
        const registry = new ActorRegistry({
          kind: actorKind.kind,
          load: (id, db) => actorKind.load(id, db, this),
          lock: (id, tx) => actorKind.lock(id, tx),
          lockFirst: actorKind.lockFirst ?? false,
          db: () => this.db(),
          commit: (work) => this.commit(work),
          capacity: config.actorCapacity,
          ...(actorKind.onEvict && { onEvict: (id: string) => actorKind.onEvict?.(id, this) }),
        });
        this.#registries.set(actorKind.kind, registry as ActorRegistry<never>);
        Object.defineProperty(this, actorKind.registry, { value: registry, enumerable: true });
      }
    }
    this.accountSections = onePerName(
      capabilities.flatMap((capability) => capability.accountSections ?? []),
      (section) => `Two account sections are named ${section.key}.`,
      (section) => section.key,
    );
    this.scopeTargets = onePerName(
      capabilities.flatMap((capability) => capability.scopeTargets ?? []),
      (target) => `Two scope targets check the prefix ${target.prefix}.`,
      (target) => target.prefix,
    );
    this.tokens = new TokenResolver(
      () => this.db(),
      () => this.driver,
      this.clock,
    );
    this.signatures = new RequestSignatures(
      () => this.db(),
      () => this.driver,
      this.clock,
    );
  }

  /**
   * Makes what a capability's start-up step made (its blob store, its keys) a member of every
   * handler's services; the capability declares the member's type beside its start-up step.
   */
  provide<K extends keyof this & string>(name: K, value: this[K]): void {
    if (Object.hasOwn(this, name)) throw new Error(`Services already have ${name}.`);
    Object.defineProperty(this, name, { value, enumerable: true });
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
   * The write path (docs/architecture.md, "A write, end to end"): `work` runs in one transaction
   * with the change rows it returns; only after the commit does memory catch up
   * (`afterCommit`) and are the changes pushed. If anything fails, nothing is written and
   * nothing is pushed. Inside a request's unit of work, `work` is a savepoint of the unit's
   * transaction and the after-commit steps wait for the unit to commit.
   */
  async commit<R>(work: (tx: Transaction) => Promise<CommitWork<R>>): Promise<R> {
    // The last statement carries the COMMIT, or on PostgreSQL what the driver asks before it
    // (Transaction.lastQuery): the change rows, with the notifications when others listen, or
    // the notifications alone when the write records no change.
    const notifies = Boolean(this.driver.listen);
    const record = async (tx: Transaction) => {
      const outcome = await work(tx);
      if (this.config.strictProtocol) assertChangesDeclared(outcome.changes);
      const last: Queryable['query'] = (text, params) => tx.lastQuery(text, params);
      const notices = notifies ? actorNotifications(this.instance, outcome.notices ?? []) : [];
      const changes = outcome.changes ?? [];
      // Other processes are told by the statement that records the changes (one round trip).
      const stored = await appendChanges(
        tx,
        changes,
        last,
        // PGlite runs one transaction at a time: no other write can deadlock with this one.
        this.driver.kind === 'pglite',
        notifies ? { sender: this.instance, also: notices } : undefined,
      );
      if (changes.length === 0) await notifyAll(last, notices);
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
    // What changes an agent's account figures either reaches its feed or says so by notice.
    for (const change of stored) this.counts.forget(change.agentId);
    for (const notice of outcome.notices ?? []) {
      if (notice.kind === COUNTS_NOTICE_KIND) this.counts.forget(notice.id);
    }
    this.hub.publish(stored);
  }

  /**
   * Hears of commits by other processes on the same database: their changes wake sockets and
   * waiters here, and their actor versions make copies here stale. A lost notification costs
   * latency (readers re-read; a stale copy fails its version check and reloads), never data.
   */
  async listenToOtherProcesses(): Promise<void> {
    await this.driver.listen?.(CHANGES_CHANNEL, (payload) => {
      const { sender, heads } = parseChangeNotification(payload);
      if (sender === this.instance) return;
      for (const [agentId, seq] of heads) {
        this.counts.forget(agentId);
        this.hub.signal(agentId, seq);
      }
    });
    await this.driver.listen?.(ACTOR_CHANNEL, (payload) => {
      const notice = parseActorNotice(payload);
      if (!notice || notice.sender === this.instance) return;
      if (notice.kind === TOKEN_NOTICE_KIND) this.forgetCredentials(notice.id);
      else if (notice.kind === COUNTS_NOTICE_KIND) this.counts.forget(notice.id);
      else this.#registries.get(notice.kind)?.invalidate(notice.id, notice.version);
    });
    this.driver.onListenResumed?.(() => this.forgetWhatOthersMayHaveChanged());
  }

  /**
   * After the listening connection was lost and came back, word from other processes may be
   * missing: every copy they could have made stale is dropped (actors, tokens, account figures)
   * and every socket and long-poll re-reads its feed, so a change committed meanwhile arrives.
   */
  private forgetWhatOthersMayHaveChanged(): void {
    this.counts.clear();
    this.tokens.forgetAll();
    this.signatures.forgetAll();
    for (const registry of this.#registries.values()) registry.invalidateAll();
    this.hub.resync();
  }

  /**
   * Forgets what this process holds of an agent's credentials (its tokens, its signing keys):
   * they changed, here or in another process.
   */
  forgetCredentials(agentId: string): void {
    this.tokens.forgetAgent(agentId);
    this.signatures.forgetAgent(agentId);
  }

  /**
   * Tells other processes that an agent's credentials (tokens, signing keys, suspension)
   * changed, inside the transaction that did it.
   */
  async noticeTokenChange(tx: Queryable, agentId: string): Promise<void> {
    if (!this.driver.listen) return;
    await notifyActors(tx, this.instance, [{ kind: TOKEN_NOTICE_KIND, id: agentId, version: 0 }]);
  }

  /**
   * For a write committed outside `commit` (one autocommitted statement) that changed an
   * agent's account figures: forgets them here and tells other processes to. Call it after the
   * write resolved.
   */
  async countsChanged(agentId: string): Promise<void> {
    this.counts.forget(agentId);
    if (!this.driver.listen) return;
    await notifyActors(this.driver, this.instance, [
      { kind: COUNTS_NOTICE_KIND, id: agentId, version: 0 },
    ]);
  }

  /** Whether the database answers now (for /health). */
  async databaseReachable(): Promise<boolean> {
    return this.driver.ping().then(
      () => true,
      () => false,
    );
  }

  /** Ends every wait for news (see `stopping`). */
  beginShutdown(): void {
    this.#stopping.abort();
  }

  /** Lets go of every actor after their mailboxes drain. */
  async flush(): Promise<void> {
    const registries = [...this.#registries.values()];
    await Promise.all(registries.map((registry) => registry.flush()));
    for (const registry of registries) registry.clear();
  }
}

/** `items`, refused at start-up (`twice` says why) when two of them share a name. */
function onePerName<T>(items: T[], twice: (item: T) => string, nameOf: (item: T) => string): T[] {
  const seen = new Set<string>();
  for (const item of items) {
    if (seen.has(nameOf(item))) throw new Error(twice(item));
    seen.add(nameOf(item));
  }
  return items;
}
