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
 * (TokenResolver.watch). Presence holds the agent present for exactly that long by taking
 * part in each watch, without any door, or the kernel, knowing that presence exists.
 */
function holdWhileWatched(services: Services, tracker: PresenceTracker): void {
  const tokens = services.tokens;
  const watch = tokens.watch.bind(tokens);
  tokens.watch = (grant, ended) => {
    const release = tracker.hold(grant.agentId);
    const unwatch = watch(grant, (why) => {
      release();
      ended(why);
    });
    return () => {
      release();
      unwatch();
    };
  };
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
