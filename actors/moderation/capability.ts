import type { Capability } from '../kernel/capability.ts';
import {
  hideListing,
  readOperatorLog,
  restoreAgent,
  showListing,
  suspendAgent,
} from './handlers.ts';
import { Suspensions } from './suspensions.ts';

/** The operator's moderation: hidden listings, suspended agents, and the log of both. */
export const moderation = {
  name: 'moderation',
  handlers: {
    hide_listing: hideListing,
    show_listing: showListing,
    suspend_agent: suspendAgent,
    restore_agent: restoreAgent,
    read_operator_log: readOperatorLog,
  },
  async startUp(services) {
    services.provide('suspensions', new Suspensions(() => services.db(), services.tokens));
  },
} satisfies Capability;
