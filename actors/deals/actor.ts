import { dealCodec, type dealMachine, dealStatus, type DealSnapshot } from '../../machines/deal.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import { findDeal, updateDeal, type DealRow } from '../../storage/deals/deals.ts';
import { MachineActor } from '../kernel/machine-actor.ts';

/**
 * One deal, live: where its file is and its machine (draft, agreed, delivered, closed), at the
 * version of its row. Agreements, deliveries and ratings are its commands; each also takes the
 * workspace's row lock, because its receipt is chained after the workspace's last one.
 */
export class DealActor extends MachineActor<typeof dealMachine> {
  constructor(
    readonly record: Pick<DealRow, 'dealId' | 'workspaceId' | 'path' | 'createdAt'>,
    snapshot: DealSnapshot,
    version: number,
  ) {
    super(dealCodec, snapshot, version);
  }

  get status() {
    return dealStatus(this.state);
  }

  protected save(tx: Transaction, next: DealSnapshot, machine: unknown): Promise<number | null> {
    return updateDeal(tx, this.record.dealId, this.version, { status: dealStatus(next), machine });
  }
}

export async function loadDealActor(db: Queryable, dealId: string): Promise<DealActor | null> {
  const row = await findDeal(db, dealId);
  return row ? new DealActor(row, dealCodec.restore(row.machine), row.version) : null;
}
