import type { Queryable, Transaction } from '../../storage/driver.ts';
import type { AccountSection } from './account-sections.ts';
import type { Handlers } from './handler.ts';
import type { PersistentActor } from './registry.ts';
import type { Services } from './services.ts';
import type { CapabilitySettings } from './settings.ts';
import type { ScopeTarget } from './token-scope.ts';

/**
 * One kind of in-memory actor a capability owns (an agent, a workspace, a deal...): how to load
 * one from storage and how to lock its row. The kernel builds one registry per kind, routes
 * other processes' notices to it by `kind`, and flushes it at shutdown.
 */
interface ActorKind<A extends PersistentActor> {
  /** The `kind` of the notices that make copies stale (and the registry's name in messages). */
  readonly kind: string;
  /**
   * Where handlers find the registry: `services[registry]`. The capability declares that member
   * on Services (declaration merging) beside this object.
   */
  readonly registry: string;
  load(id: string, db: Queryable, services: Services): Promise<A | undefined>;
  /** Locks the actor's row in `tx` and returns its stored version (null when it is gone). */
  lock(id: string, tx: Transaction): Promise<number | null>;
  /** Check the copy in memory against the row before deciding (the decision reads memory). */
  readonly lockFirst?: boolean;
  /** Called when the registry lets go of an actor. */
  onEvict?(id: string, services: Services): void;
}

/**
 * Work a capability does on time, whoever asks (invites run out even when nobody looks). Runs in
 * exactly one process per fire; a restart runs at once what fell due while it was down.
 */
export interface CapabilityJob {
  /** Stable: the job's row in `scheduled_jobs` is found by it across restarts. */
  readonly name: string;
  /** When it runs, as a cron expression (minute hour day month weekday). */
  readonly schedule: string;
  /** What it does, in the words of README.md's row of its JOB_SCHEDULE_<NAME> variable. */
  readonly purpose: string;
  /** `now` is the service clock's time of the fire. Must be idempotent. */
  run(services: Services, now: Date): Promise<void>;
}

/**
 * One capability of the service (files, the store, deals...) as it plugs itself in: the
 * handlers of its operations, its actor kinds, its jobs and its start-up step. Each folder of
 * actors/ exports one from its capability.ts; actors/capabilities.ts lists them, and the handler
 * table, the actor registries, the jobs and start-up are built from that list.
 */
export interface Capability {
  readonly name: string;
  /** Its operations' handlers, by operation name (each operation has one capability). */
  readonly handlers: Partial<Handlers>;
  // Each kind names its own actor type; the registry map keeps them apart by `kind`.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly actors?: readonly ActorKind<any>[];
  readonly jobs?: readonly CapabilityJob[];
  /** The environment variables it reads, and what it tells Services of them (settings.ts). */
  readonly settings?: CapabilitySettings;
  /** The parts of the caller's account (`whoami`) it owns (account-sections.ts). */
  readonly accountSections?: readonly AccountSection[];
  /** How a token scope naming one of its things is checked when a token is made (token-scope.ts). */
  readonly scopeTargets?: readonly ScopeTarget[];
  /**
   * The values it gives the documents' placeholders (`{help_workspace_id}` in a document of
   * protocol/documents/ is the workspaces'), read once after every start-up step has run.
   */
  documentValues?(services: Services): Readonly<Record<string, string>>;
  /** Runs once at start-up, in the order of the capability list, before any request. */
  startUp?(services: Services, log: (message: string) => void): Promise<void>;
  /**
   * Runs once when the service stops, in the reverse order, after the last request and before
   * the actors are flushed and storage closes: stops what startUp set going (a poll loop).
   */
  shutDown?(services: Services): Promise<void>;
}
