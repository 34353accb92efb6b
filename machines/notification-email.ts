import { assign, setup, type SnapshotFrom } from 'xstate';
import { machineCodec } from './codec.ts';

/**
 * The person's address for an agent's notification digests. It is pending until the person
 * confirms it (the 6-digit code given to the agent, or the link in the email), voided by five
 * wrong codes, and unsubscribed by the link every email carries. A new address set by the
 * agent starts it again as pending, whatever it was. Only a confirmed address gets digests.
 */
export interface NotificationEmailContext {
  /** Wrong codes tried since the address was set. */
  wrong_codes: number;
}

export type NotificationEmailEvent =
  | { type: 'set' }
  | { type: 'confirm_code'; matches: boolean }
  | { type: 'confirm_link' }
  | { type: 'unsubscribe' };

export type NotificationEmailStatus = 'pending' | 'confirmed' | 'voided' | 'unsubscribed';

/** Wrong codes that void a pending address (the person is asked for a new one). */
export const MAX_WRONG_CODES = 5;

const notificationEmailMachine = setup({
  types: {
    context: {} as NotificationEmailContext,
    events: {} as NotificationEmailEvent,
    input: {} as NotificationEmailContext | undefined,
  },
  guards: {
    codeMatches: ({ event }) => event.type === 'confirm_code' && event.matches,
    lastWrongCode: ({ context }) => context.wrong_codes + 1 >= MAX_WRONG_CODES,
  },
  actions: {
    countWrongCode: assign({ wrong_codes: ({ context }) => context.wrong_codes + 1 }),
  },
}).createMachine({
  id: 'notification-email',
  context: ({ input }) => ({ wrong_codes: input?.wrong_codes ?? 0 }),
  initial: 'pending',
  on: {
    // A new address (or the same one again): a new code and link, counted from nothing.
    set: { target: '.pending', reenter: true, actions: assign({ wrong_codes: 0 }) },
  },
  states: {
    pending: {
      on: {
        confirm_code: [
          { guard: 'codeMatches', target: 'confirmed' },
          { guard: 'lastWrongCode', target: 'voided', actions: 'countWrongCode' },
          { actions: 'countWrongCode' },
        ],
        confirm_link: { target: 'confirmed' },
        // The confirmation email carries the unsubscribe link too: "not me" ends it at once.
        unsubscribe: { target: 'unsubscribed' },
      },
    },
    confirmed: { on: { unsubscribe: { target: 'unsubscribed' } } },
    voided: { on: { unsubscribe: { target: 'unsubscribed' } } },
    unsubscribed: {},
  },
});

export type NotificationEmailSnapshot = SnapshotFrom<typeof notificationEmailMachine>;

/** The machine's first snapshot, its steps, its stored form and the way back. */
export const notificationEmailCodec = machineCodec(notificationEmailMachine);

export function notificationEmailStatus(
  snapshot: NotificationEmailSnapshot,
): NotificationEmailStatus {
  if (snapshot.matches('confirmed')) return 'confirmed';
  if (snapshot.matches('voided')) return 'voided';
  if (snapshot.matches('unsubscribed')) return 'unsubscribed';
  return 'pending';
}

/**
 * The snapshot a stored row stands for: the row keeps the status and the count of wrong codes
 * in columns of their own (storage/email/notification-emails.ts), which is all the machine holds.
 */
export function notificationEmailFromRow(row: {
  status: NotificationEmailStatus;
  wrongCodes: number;
}): NotificationEmailSnapshot {
  return notificationEmailCodec.restore({
    status: 'active',
    value: row.status,
    context: { wrong_codes: row.wrongCodes },
    children: {},
    historyValue: {},
  });
}
