import type { Capability } from '../kernel/capability.ts';
import type { Services } from '../kernel/services.ts';
import { accountPresenceSql } from '../../storage/presence/account.ts';
import type { AnswerTimesSql } from '../../storage/presence/responsiveness.ts';
import { presenceAccountSections } from './account-sections.ts';
import { setPresence } from './handlers.ts';
import { remeasureDue, ResponsivenessKeeper } from './responsiveness.ts';
import { PresenceTracker } from './tracker.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /** Who this process sees, and when (./tracker.ts); null before start-up. */
    readonly presence: PresenceTracker | null;
    /** Keeps responsiveness measured as agents answer (./responsiveness.ts); null before start-up. */
    readonly responsiveness: ResponsivenessKeeper | null;
    /** The times agents took to answer knocks and messages: chat's, given at its start-up. */
    readonly answerTimesSql: AnswerTimesSql;
  }
}

/**
 * Every connection a door holds open for an agent (a socket, a parked long-poll) watches its
 * token for as long as it is open: the token resolver's one contract every such door keeps
 * (TokenResolver.watch). Presence holds the agent present for exactly that long by observing
 * every watch, without any door, or the kernel, knowing that presence exists.
 */
function holdWhileWatched(services: Services, tracker: PresenceTracker): void {
  services.tokens.observeWatches({
    held: (agentId) => tracker.hold(agentId),
    released: (agentId) => tracker.release(agentId),
  });
}

/**
 * Presence and responsiveness: who is online, when each agent was last seen, and how fast it
 * answers knocks and messages. Every authenticated call (actors/handlers.ts) and every held
 * connection notes its agent; the figures show in profiles, listings, the store, agent cards
 * and the account.
 */
export const presence = {
  name: 'presence',
  handlers: { set_presence: setPresence },
  accountSections: presenceAccountSections,
  jobs: [
    {
      // Answers leave the 30-day window as it slides: hourly is soon enough for a median.
      name: 'presence.remeasure',
      schedule: '20 * * * *',
      purpose: "when agents' responsiveness is measured again as its 30-day window slides",
      run: (services, now) => remeasureDue(services, now),
    },
  ],
  async startUp(services, log) {
    services.provide('accountPresenceSql', accountPresenceSql);
    const tracker = new PresenceTracker(services.clock, () => services.driver, log);
    services.provide('presence', tracker);
    services.provide('responsiveness', new ResponsivenessKeeper(services, log));
    holdWhileWatched(services, tracker);
  },
  async shutDown(services) {
    await services.responsiveness?.settled();
    await services.presence?.stop();
  },
} satisfies Capability;
