import type { SaveHook } from '../files/save-hooks.ts';
import { listingDeleted, listingSaved } from './listings.ts';

/**
 * The store follows saves of listings: a save of a listing's path is checked and recorded and
 * wakes the watches it matches; a delete takes the listing out. Listings live only in public
 * workspaces (post_listing refuses others, and a workspace's visibility never changes), so a save
 * elsewhere is no listing unless post_listing declares it, and is not looked up.
 */
export const storeSaveHook: SaveHook = {
  async saved(tx, services, saved) {
    if (saved.visibility !== 'public' && !saved.listing) return [];
    return listingSaved(tx, services, saved.principal, {
      workspaceId: saved.workspaceId,
      path: saved.path,
      version: saved.version,
      savedAt: saved.savedAt,
      index: saved.index,
      declared: saved.listing,
    });
  },
  async deleted(tx, _services, workspaceId, path) {
    await listingDeleted(tx, workspaceId, path);
  },
};
