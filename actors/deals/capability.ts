import { DEAL_RECEIPTS_SQL } from '../../storage/deals/deal-receipts.ts';
import { lockDeal } from '../../storage/deals/deals.ts';
import { forgetRecordChanges } from '../../storage/deals/record-changes.ts';
import type { Capability } from '../kernel/capability.ts';
import type { ActorRegistry } from '../kernel/registry.ts';
import { loadDealActor, type DealActor } from './actor.ts';
import { agree, deliver, getDeal, listDeals, rate } from './handlers.ts';
import { RECORD_CHANGES_KEPT_MS, RecordCache } from './record-cache.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /** Every deal, live while in use: its parties and machine. */
    readonly deals: ActorRegistry<DealActor>;
    /** The public records this process computed, served again while unchanged. */
    readonly reputationRecords: RecordCache;
  }
}

/** Deals: agreed, delivered and rated, each step a signed receipt in the workspace's chain. */
export const deals = {
  name: 'deals',
  handlers: { get_deal: getDeal, list_deals: listDeals, agree, deliver, rate },
  actors: [
    {
      kind: 'deal',
      registry: 'deals',
      load: (dealId, db) => loadDealActor(db, dealId),
      lock: (dealId, tx) => lockDeal(tx, dealId),
      // Agreements decide from the machine in memory: check the copy before deciding.
      lockFirst: true,
    },
  ],
  jobs: [
    {
      // A kept record trusts its snapshot for ten minutes; the notes it is checked against
      // stay for an hour (JOB_SCHEDULE_DEALS_RECORDS_FORGET).
      name: 'deals.records.forget',
      schedule: '23 * * * *',
      purpose: "when the notes of changes to agents' public records older than an hour are deleted",
      run: async (services, now) =>
        void (await forgetRecordChanges(
          services.driver,
          new Date(now.getTime() - RECORD_CHANGES_KEPT_MS),
        )),
    },
  ],
  async startUp(services) {
    services.provide('reputationRecords', new RecordCache());
    for (const [kind, select] of Object.entries(DEAL_RECEIPTS_SQL))
      services.receiptSources.add(`deal ${kind}`, select);
  },
} satisfies Capability;
