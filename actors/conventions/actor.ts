import {
  conventionStatus,
  newConvention,
  persistConvention,
  restoreConvention,
  type ConventionSnapshot,
} from '../../machines/convention.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import {
  findConvention,
  updateConventionState,
  type ConventionRow,
} from '../../storage/conventions.ts';
import type { PersistentActor } from '../kernel/registry.ts';

/**
 * One convention, live: its definition (never changed once registered) and its machine
 * (unplaced, placed, refused), at the version of its row. Placement and refusal are commands
 * through the registry; listings read the definition to be checked against it.
 */
export class ConventionActor implements PersistentActor<ConventionSnapshot> {
  private snapshot: ConventionSnapshot;

  constructor(
    readonly record: Omit<ConventionRow, 'version' | 'machine' | 'status' | 'placement'>,
    snapshot: ConventionSnapshot,
    public version: number,
  ) {
    this.snapshot = snapshot;
  }

  get name(): string {
    return this.record.name;
  }

  get state(): ConventionSnapshot {
    return this.snapshot;
  }

  get status() {
    return conventionStatus(this.snapshot);
  }

  get placement(): string[] | null {
    return this.snapshot.context.placement;
  }

  async persist(tx: Transaction, next: ConventionSnapshot | undefined): Promise<number | null> {
    if (next === undefined) return this.version;
    return updateConventionState(tx, this.name, this.version, {
      status: conventionStatus(next),
      placement: next.context.placement,
      machine: persistConvention(next),
    });
  }

  apply(next: ConventionSnapshot | undefined, version: number): void {
    if (next !== undefined) this.snapshot = next;
    this.version = version;
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
      : restoreConvention(row.machine);
  return new ConventionActor(row, snapshot, row.version);
}
