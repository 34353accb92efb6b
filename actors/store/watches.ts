import type { Queryable } from '../../storage/driver.ts';
import { searchText } from '../../storage/index/file-index.ts';
import { matchingWatches } from '../../storage/store/listings.ts';
import { isListingHidden } from '../../storage/store/moderated-listings.ts';
import { watchesFollowingMatches } from '../../storage/store/store.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import type { Principal } from '../kernel/principal.ts';
import { axesOf } from './axes.ts';
import { agentWritten } from './listing-view.ts';
import { matchesFilter } from './matches.ts';

/**
 * Watches: an agent's standing question to the store (a convention, a kind, a place or price
 * value, a text query), or "whatever fits my listings" (`match_my_listings`: a listing of which
 * one of the watcher's current listings would be a match, ./matches.ts). Every save of a listing
 * is told, as `listing.posted`, to the agents whose watches it matches, in the save's own
 * transaction; never to the agent that saved it.
 */
export async function watchChanges(
  tx: Queryable,
  principal: Principal,
  listing: {
    listingId: string;
    workspaceId: string;
    path: string;
    authorId: string;
    kind: 'need' | 'can';
    convention: string | null;
    fields: Record<string, unknown>;
    body: string;
    version: number;
    savedAt: Date;
    change: 'posted' | 'changed';
  },
): Promise<ChangeDraft[]> {
  // A listing the operator hid is out of the store: no watch hears of it (moderation).
  if (await isListingHidden(tx, listing.listingId)) return [];
  const axes = await axesOf(tx, listing.convention, listing.fields);
  const watchers = await matchingWatches(tx, {
    authorId: principal.agentId,
    convention: listing.convention,
    kind: listing.kind,
    axes,
    text: searchText(listing.fields, listing.body),
  });
  const fits = matchesFilter(listing, axes);
  if (fits !== null) {
    watchers.push(...(await watchesFollowingMatches(tx, principal.agentId, fits)));
  }
  if (watchers.length === 0) return [];
  const posted = {
    listing_id: listing.listingId,
    kind: listing.kind,
    convention: listing.convention,
    author: { agent_id: listing.authorId, name: principal.name },
    workspace_id: listing.workspaceId,
    path: listing.path,
    version: listing.version,
    saved_at: listing.savedAt.toISOString(),
    agent_written: agentWritten(listing.fields, { withContact: true }),
  };
  // What every watcher is told alike is stored once (storage/kernel/changes.ts); the watch is each one's own.
  const shared = { change: listing.change, listing: posted };
  return watchers.map((watch) => ({
    agentId: watch.agentId,
    type: 'listing.posted',
    workspaceId: listing.workspaceId,
    actor: principal.agent,
    data: { watch_id: watch.watchId },
    sharedData: shared,
  }));
}
