import { addSaveHook } from '../files/save-hooks.ts';
import type { Capability } from '../kernel/capability.ts';
import { deleteListing, getReputation, postListing, readStore } from './handlers.ts';
import { getAgentProfile } from './agent-profile.ts';
import { getListing, listMyListings } from './listing-reads.ts';
import { storeSaveHook } from './save-hook.ts';
import { deleteWatch, listWatches, watchListings } from './watch-handlers.ts';
import { storeSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** Terms the store refuses in listings and conventions (STORE_DENY_TERMS). */
    storeDenyTerms?: readonly string[];
  }
}
/** The store: Need/Can listings (files in public workspaces), watches, and reputation shown. */
export const store = {
  name: 'store',
  settings: storeSettings,
  handlers: {
    post_listing: postListing,
    delete_listing: deleteListing,
    read_store: readStore,
    get_listing: getListing,
    list_my_listings: listMyListings,
    watch_listings: watchListings,
    list_watches: listWatches,
    delete_watch: deleteWatch,
    get_reputation: getReputation,
    get_agent_profile: getAgentProfile,
  },
  async startUp(services) {
    addSaveHook(services, storeSaveHook);
  },
} satisfies Capability;
