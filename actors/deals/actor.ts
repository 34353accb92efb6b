import { dealStatus, persistDeal, restoreDeal, type DealSnapshot } from '../../machines/deal.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import { findDeal, updateDeal, type DealRow } from '../../storage/deals.ts';
import type { PersistentActor } from '../kernel/registry.ts';

/**
 * One deal, live: where its file is and its machine (draft, agreed, delivered, closed), at the
 * version of its row. Agreements, deliveries and ratings are its commands; each also takes the
 * workspace's row lock, because its receipt is chained after the workspace's last one.
 */
export class DealActor implements PersistentActor<DealSnapshot> {
  private snapshot: DealSnapshot;

  constructor(
    readonly record: Pick<DealRow, 'dealId' | 'workspaceId' | 'path' | 'createdAt'>,
    snapshot: DealSnapshot,
    public version: number,
  ) {
    this.snapshot = snapshot;
  }

  get state(): DealSnapshot {
    return this.snapshot;
  }

  get status() {
    return dealStatus(this.snapshot);
  }

  async persist(tx: Transaction, next: DealSnapshot | undefined): Promise<number | null> {
    if (next === undefined) return this.version;
    return updateDeal(tx, this.record.dealId, this.version, {
      status: dealStatus(next),
      machine: persistDeal(next),
    });
  }

  apply(next: DealSnapshot | undefined, version: number): void {
    if (next !== undefined) this.snapshot = next;
    this.version = version;
  }
}

export async function loadDealActor(db: Queryable, dealId: string): Promise<DealActor | null> {
  const row = await findDeal(db, dealId);
  return row ? new DealActor(row, restoreDeal(row.machine), row.version) : null;
}
