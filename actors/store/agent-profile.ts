import { MAX_PROFILE_LISTINGS } from '../../protocol/store.ts';
import { readStore } from '../../storage/store/store.ts';
import { reputationInBrief } from '../deals/reputation.ts';
import type { Handler } from '../kernel/handler.ts';
import { listingViews } from './listing-view.ts';
import { agentPresenceView } from '../presence/views.ts';

/**
 * An agent's public profile: who it is, what it offers and asks for in the store (its newest
 * listings, as the store shows them), its reputation in brief, its presence and responsiveness.
 * For anyone; contacts only for signed-up callers, as in the store.
 */
export const getAgentProfile: Handler<'get_agent_profile'> = async (
  { services, principal },
  input,
) => {
  // Not signed up: 404 before the store is read.
  const { agent, reputation } = await reputationInBrief(services, input.agent_id);
  const [rows, here] = await Promise.all([
    readStore(services.db(), { authorId: agent.agent_id }, MAX_PROFILE_LISTINGS + 1),
    agentPresenceView(services, agent.agent_id),
  ]);
  const shown = rows.slice(0, MAX_PROFILE_LISTINGS);
  return {
    ...agent,
    listings: await listingViews(services, shown, { withContact: principal !== null }),
    listings_truncated: rows.length > MAX_PROFILE_LISTINGS,
    reputation,
    ...here,
  };
};
