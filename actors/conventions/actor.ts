import {
  conventionCodec,
  type conventionMachine,
  conventionStatus,
  newConvention,
  type ConventionSnapshot,
} from '../../machines/convention.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import {
  findConvention,
  updateConventionState,
  type ConventionRow,
} from '../../storage/conventions/conventions.ts';
import { MachineActor } from '../kernel/machine-actor.ts';

/**
 * One convention, live: its definition (never changed once registered) and its machine
 * (unplaced, placed, refused), at the version of its row. Placement and refusal are commands
 * through the registry; listings read the definition to be checked against it.
 */
export class ConventionActor extends MachineActor<typeof conventionMachine> {
  constructor(
    readonly record: Omit<ConventionRow, 'version' | 'machine' | 'status' | 'placement'>,
    snapshot: ConventionSnapshot,
    version: number,
  ) {
    super(conventionCodec, snapshot, version);
  }

  get name(): string {
    return this.record.name;
  }

  get status() {
    return conventionStatus(this.state);
  }

  get placement(): string[] | null {
    return this.state.context.placement;
  }

  protected save(
    tx: Transaction,
    next: ConventionSnapshot,
    machine: unknown,
  ): Promise<number | null> {
    return updateConventionState(tx, this.name, this.version, {
      status: conventionStatus(next),
      placement: next.context.placement,
      machine,
    });
  }
}

export async function loadConventionActor(
  db: Queryable,
  name: string,
): Promise<ConventionActor | null> {
  const row = await findConvention(db, name);
  if (!row) return null;
  // The built-in conventions are seeded without a machine: placed where they were seeded.
  const snapshot =
    row.machine === null
      ? newConvention(row.name, row.status === 'placed' ? row.placement : null)
      : conventionCodec.restore(row.machine);
  return new ConventionActor(row, snapshot, row.version);
}
