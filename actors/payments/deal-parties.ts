import { partyOfDeal, type DealContext } from '../../machines/deal.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { findDeal, type DealRow } from '../../storage/deals/deals.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { readable } from '../workspaces/access.ts';

/**
 * The deal a payment (on-chain or off-chain) is about, for a caller that must be one of its
 * parties: a party of any version that was agreed. Someone who neither is a party nor reads
 * the deal's workspace gets the 404 of a missing deal; then a deal not agreed yet answers
 * `409 deal_not_agreed`, and a reader of the workspace that is no party `403 forbidden`.
 */
export async function agreedDealOf(
  services: Services,
  principal: Principal,
  dealId: string,
): Promise<{ row: DealRow; context: DealContext }> {
  const row = await findDeal(services.db(), dealId);
  if (!row) throw notFound('deal');
  const deal = await services.deals.get(dealId);
  if (!deal) throw notFound('deal');
  const context = deal.state.context;
  const party = partyOfDeal(context, principal.agentId);
  if (!party && !(await reads(services, principal, row.workspaceId))) throw notFound('deal');
  if (!context.agreed) {
    throw new ServiceError(
      'deal_not_agreed',
      'Not every party has agreed to one version of this deal yet: payments follow an agreement.',
    );
  }
  if (!party) throw new ServiceError('forbidden', 'You are not a party of this deal.');
  return { row, context };
}

/** Refuses `agentId` as the other side of a payment unless it is another party of the deal. */
export function assertOtherParty(
  context: DealContext,
  principal: Principal,
  agentId: string,
  field: string,
): void {
  if (agentId === principal.agentId) {
    throw new ServiceError(
      'invalid_input',
      `${field}: a payment is between two parties; not you.`,
      {
        field,
      },
    );
  }
  if (!partyOfDeal(context, agentId)) {
    throw new ServiceError('invalid_input', `${field}: that agent is not a party of this deal.`, {
      field,
    });
  }
}

async function reads(services: Services, principal: Principal, workspaceId: string) {
  try {
    await readable(services, principal, workspaceId);
    return true;
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'not_found') return false;
    throw error;
  }
}
