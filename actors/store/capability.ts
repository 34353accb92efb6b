import { addSaveHook } from '../files/save-hooks.ts';
import type { Capability } from '../kernel/capability.ts';
import { deleteListing, getReputation, postListing, readStore } from './handlers.ts';
import { storeSaveHook } from './save-hook.ts';
import { deleteWatch, listWatches, watchListings } from './watch-handlers.ts';

/** The store: Need/Can listings (files in public workspaces), watches, and reputation shown. */
export const store = {
  name: 'store',
  handlers: {
    post_listing: postListing,
    delete_listing: deleteListing,
    read_store: readStore,
    watch_listings: watchListings,
    list_watches: listWatches,
    delete_watch: deleteWatch,
    get_reputation: getReputation,
  },
  async startUp(services) {
    addSaveHook(services, storeSaveHook);
  },
} satisfies Capability;
