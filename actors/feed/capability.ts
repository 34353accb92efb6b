import type { Capability } from '../kernel/capability.ts';
import { changes, waitForChanges } from './handlers.ts';

/** The change feed: every agent's changes, read, waited for, pushed (the socket door). */
export const feed = {
  name: 'feed',
  handlers: { changes, wait_for_changes: waitForChanges },
} satisfies Capability;
