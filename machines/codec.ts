import {
  createActor,
  initialTransition,
  transition,
  type AnyStateMachine,
  type EventFromLogic,
  type InputFrom,
  type SnapshotFrom,
} from 'xstate';

/**
 * How a pure machine of machines/ is kept: its first snapshot, the snapshot after an event, the
 * snapshot's stored form (JSON, in its row's `machine` column) and the way back. Generic over
 * the machine, so each machine module holds only its machine, its rules and its codec.
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

export interface CodecOptions {
  /**
   * Brings a stored form written by an older version of the machine to the current one, before
   * it is restored. Rows keep the form they were written in until they are next saved.
   */
  upgrade?: (saved: unknown) => unknown;
}

/** The codec of `machine`, on xstate's own functions; nothing is ever started or run. */
export function machineCodec<M extends AnyStateMachine>(
  machine: M,
  { upgrade = (saved) => saved }: CodecOptions = {},
): MachineCodec<M> {
  type Snapshot = SnapshotFrom<M>;
  return {
    machine,
    start: (input) => initialTransition<AnyStateMachine>(machine, input)[0] as Snapshot,
    step: (snapshot, event) => transition(machine, snapshot, event)[0],
    persist: (snapshot) => machine.getPersistedSnapshot(snapshot),
    // createActor with a snapshot is xstate's documented way back from a persisted snapshot;
    // the actor is only a vehicle here and is never started.
    restore: (saved) =>
      createActor(machine, {
        snapshot: upgrade(saved) as Snapshot,
        input: undefined,
      }).getSnapshot(),
  };
}
