import type { SaveHook } from '../files/save-hooks.ts';
import { indexEntryOf } from '../index/save-hook.ts';
import { listingDeleted, listingSaved } from './listings.ts';

/**
 * The store follows saves of listings: a save of a listing's path is checked and recorded and
 * wakes the watches it matches; a delete takes the listing out. Listings live only in public
 * workspaces (post_listing refuses others, and a workspace's visibility never changes), so a save
 * elsewhere is no listing unless post_listing declares it, and is not looked up. A listing saved
 * is named to the hooks after this one (a token it leaks is reported as the listing's).
 */
export const storeSaveHook: SaveHook = {
  async saved(tx, services, saved) {
    if (saved.visibility !== 'public' && !saved.listing) return {};
    const listing = await listingSaved(tx, services, saved.principal, {
      workspaceId: saved.workspaceId,
      path: saved.path,
      version: saved.version,
      savedAt: saved.savedAt,
      index: indexEntryOf(saved),
      declared: saved.listing,
    });
    return listing ? { changes: listing.changes, listed: { listingId: listing.listingId } } : {};
  },
  async deleted(tx, _services, workspaceId, path) {
    await listingDeleted(tx, workspaceId, path);
  },
};
