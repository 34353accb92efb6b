import {
  createActor,
  initialTransition,
  transition,
  type AnyStateMachine,
  type EventFromLogic,
  type InputFrom,
  type SnapshotFrom,
} from 'xstate';
import type { Transaction } from '../../storage/driver.ts';
import type { PersistentActor } from './registry.ts';

/**
 * How the actors keep a pure machine of machines/: its first snapshot, the snapshot after an
 * event, the snapshot's stored form (JSON, in its row's `machine` column) and the way back.
 * Generic over the machine, so each machine module holds only its machine and its rules.
 */
export interface MachineCodec<M extends AnyStateMachine> {
  readonly machine: M;
  /** The machine's first snapshot for `input`. */
  start(input: InputFrom<M>): SnapshotFrom<M>;
  /** The snapshot after `event`, decided purely: the same snapshot when the machine ignores it. */
  step(snapshot: SnapshotFrom<M>, event: EventFromLogic<M>): SnapshotFrom<M>;
  /** The stored form of a snapshot. */
  persist(snapshot: SnapshotFrom<M>): unknown;
  /** A snapshot back from its stored form. */
  restore(saved: unknown): SnapshotFrom<M>;
}

/** The codec of `machine`, on xstate's own functions; nothing is ever started or run. */
export function machineCodec<M extends AnyStateMachine>(machine: M): MachineCodec<M> {
  type Snapshot = SnapshotFrom<M>;
  return {
    machine,
    start: (input) => initialTransition<AnyStateMachine>(machine, input)[0] as Snapshot,
    step: (snapshot, event) => transition(machine, snapshot, event)[0],
    persist: (snapshot) => machine.getPersistedSnapshot(snapshot),
    // createActor with a snapshot is xstate's documented way back from a persisted snapshot;
    // the actor is only a vehicle here and is never started.
    restore: (saved) =>
      createActor(machine, { snapshot: saved as Snapshot, input: undefined }).getSnapshot(),
  };
}

/**
 * An actor whose state is a machine's snapshot, kept in one versioned row. The pattern every
 * actor follows (docs/architecture.md, "A write, end to end"):
 * - a command asks `propose(event)` for the next snapshot, a pure step of the machine;
 * - the registry has `persist` write it in the command's transaction, under the version;
 * - only after the commit does `apply` take it into memory.
 * Nothing here writes outside a command, and memory never runs ahead of the database.
 */
export abstract class MachineActor<M extends AnyStateMachine> implements PersistentActor<
  SnapshotFrom<M>
> {
  private snapshot: SnapshotFrom<M>;

  constructor(
    protected readonly codec: MachineCodec<M>,
    snapshot: SnapshotFrom<M>,
    public version: number,
  ) {
    this.snapshot = snapshot;
  }

  /** The machine's snapshot as last committed. */
  get state(): SnapshotFrom<M> {
    return this.snapshot;
  }

  /** The snapshot after `event`, or undefined when the machine ignores it. Changes nothing. */
  propose(event: EventFromLogic<M>): SnapshotFrom<M> | undefined {
    const next = this.codec.step(this.snapshot, event);
    return next === this.snapshot ? undefined : next;
  }

  async persist(tx: Transaction, next: SnapshotFrom<M> | undefined): Promise<number | null> {
    if (next === undefined) return this.version;
    return this.save(tx, next, this.codec.persist(next));
  }

  /**
   * Writes `next` (`machine` is its stored form; columns that mirror it come from `next`)
   * provided the row is still at `this.version`: the row's new version, or null when another
   * process has moved it on.
   */
  protected abstract save(
    tx: Transaction,
    next: SnapshotFrom<M>,
    machine: unknown,
  ): Promise<number | null>;

  apply(next: SnapshotFrom<M> | undefined, version: number): void {
    if (next !== undefined) this.snapshot = next;
    this.version = version;
  }
}
