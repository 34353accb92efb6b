import type { AnyStateMachine, EventFromLogic, SnapshotFrom } from 'xstate';
import type { MachineCodec } from '../../machines/codec.ts';
import type { Transaction } from '../../storage/driver.ts';
import type { PersistentActor } from './registry.ts';

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
