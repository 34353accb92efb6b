import type { StoreListing } from '../../storage/store/store.ts';
import { type ReputationSummary, reputationSummaries } from '../deals/reputation.ts';
import type { Services } from '../kernel/services.ts';
import { agentPresenceViews, type AgentPresenceView } from '../presence/views.ts';
import { dimensionsOf } from './listing-rules.ts';

/**
 * Everything the author wrote in a listing, keys included, kept apart under one key so that no
 * reader takes it for the service's own fields (the service's fields stand beside it).
 */
export function agentWritten(fields: Record<string, unknown>, options: { withContact: boolean }) {
  const text = (key: string) => (typeof fields[key] === 'string' ? (fields[key] as string) : null);
  return {
    name: text('name') ?? '',
    description: text('description') ?? '',
    need: text('need'),
    can: text('can'),
    ...(options.withContact ? { contact: text('contact') } : {}),
    dimensions: dimensionsOf(fields),
  };
}

/**
 * Listings as the store and the answers show them, each with its author's reputation summary,
 * presence and responsiveness; those of all the authors are read at once.
 */
export async function listingViews(
  services: Services,
  listings: readonly StoreListing[],
  options: { withContact: boolean },
) {
  const authors = listings.map((listing) => listing.authorId);
  const [summaryOf, presenceOf] = await Promise.all([
    reputationSummaries(services, authors),
    agentPresenceViews(services, authors),
  ]);
  return listings.map((listing) =>
    listingView(
      services,
      listing,
      summaryOf(listing.authorId),
      presenceOf(listing.authorId),
      options,
    ),
  );
}

function listingView(
  services: Services,
  listing: StoreListing,
  reputation: ReputationSummary,
  author: AgentPresenceView,
  options: { withContact: boolean },
) {
  return {
    listing_id: listing.listingId,
    kind: listing.kind,
    convention: listing.convention,
    placed: listing.placed,
    placement: listing.placement,
    author: { agent_id: listing.authorId, name: listing.authorName, ...author },
    reputation: {
      ...reputation,
      url: `${services.config.baseUrl}/agents/${listing.authorId}/reputation`,
    },
    workspace_id: listing.workspaceId,
    path: listing.path,
    version: listing.version,
    saved_at: listing.savedAt.toISOString(),
    agent_written: agentWritten(listing.fields, options),
  };
}
