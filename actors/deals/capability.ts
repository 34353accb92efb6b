import { DEAL_RECEIPTS_SQL } from '../../storage/deals/deal-receipts.ts';
import { lockDeal } from '../../storage/deals/deals.ts';
import type { Capability } from '../kernel/capability.ts';
import type { ActorRegistry } from '../kernel/registry.ts';
import { loadDealActor, type DealActor } from './actor.ts';
import { agree, deliver, getDeal, listDeals, rate } from './handlers.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /** Every deal, live while in use: its parties and machine. */
    readonly deals: ActorRegistry<DealActor>;
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
  async startUp(services) {
    for (const [kind, select] of Object.entries(DEAL_RECEIPTS_SQL))
      services.receiptSources.add(`deal ${kind}`, select);
  },
} satisfies Capability;
