import { setPresenceSettings } from '../../storage/presence/presence.ts';
import { countsNotice } from '../kernel/agent-counts.ts';
import type { Handler } from '../kernel/handler.ts';

/** Shows or hides the caller's presence and sets its note; the account shows it at once. */
export const setPresence: Handler<'set_presence'> = async ({ services, principal }, input) => {
  // An empty note is no note.
  const note = input.note === '' ? null : input.note;
  return services.commit(async (tx) => ({
    result: await setPresenceSettings(tx, principal.agentId, { visible: input.visible, note }),
    notices: [countsNotice(principal.agentId)],
  }));
};
