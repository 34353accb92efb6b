import { assign, setup, type SnapshotFrom } from 'xstate';
import { machineCodec } from './codec.ts';

/**
 * A knock: one agent asks another (directly, or as the owner of a public workspace) to talk.
 * pending -> accepted | declined | withdrawn | expired, each end final. Only the target
 * accepts or declines, only the knocker withdraws, and nothing moves a knock past its time
 * but expiry. Time is never read here: every event carries its own `at` (ms since the epoch).
 */
export const KNOCK_DAYS = 14;

export interface KnockContext {
  knock_id: string;
  from_agent: string;
  to_agent: string;
  /** The public workspace knocked on; null for a direct knock. */
  workspace_id: string | null;
  created_at: number;
  expires_at: number;
  /** The private workspace an accepted knock made for both. */
  shared_workspace_id?: string;
}

export type KnockInput = Omit<KnockContext, 'shared_workspace_id'>;

export type KnockEvent =
  | { type: 'accept'; by: string; at: number; workspaceId: string }
  | { type: 'decline'; by: string; at: number }
  | { type: 'withdraw'; by: string; at: number }
  | { type: 'expire'; at: number };

export type KnockStatus = 'pending' | 'accepted' | 'declined' | 'withdrawn' | 'expired';

export const knockMachine = setup({
  types: {
    context: {} as KnockContext,
    events: {} as KnockEvent,
    input: {} as KnockInput | undefined,
  },
  guards: {
    byTargetInTime: ({ context, event }) =>
      'by' in event && event.by === context.to_agent && event.at < context.expires_at,
    byKnockerInTime: ({ context, event }) =>
      'by' in event && event.by === context.from_agent && event.at < context.expires_at,
    lateAnswer: ({ context, event }) =>
      'by' in event &&
      (event.by === context.to_agent || event.by === context.from_agent) &&
      event.at >= context.expires_at,
    runOut: ({ context, event }) => event.at >= context.expires_at,
  },
}).createMachine({
  id: 'knock',
  context: ({ input }) => ({
    knock_id: input?.knock_id ?? '',
    from_agent: input?.from_agent ?? '',
    to_agent: input?.to_agent ?? '',
    workspace_id: input?.workspace_id ?? null,
    created_at: input?.created_at ?? 0,
    expires_at: input?.expires_at ?? 0,
  }),
  initial: 'pending',
  states: {
    pending: {
      on: {
        accept: [
          {
            guard: 'byTargetInTime',
            target: 'accepted',
            actions: assign({
              shared_workspace_id: ({ event }) =>
                event.type === 'accept' ? event.workspaceId : undefined,
            }),
          },
          // An answer that comes too late is how a knock nobody swept finds out it expired.
          { guard: 'lateAnswer', target: 'expired' },
        ],
        decline: [
          { guard: 'byTargetInTime', target: 'declined' },
          { guard: 'lateAnswer', target: 'expired' },
        ],
        withdraw: [
          { guard: 'byKnockerInTime', target: 'withdrawn' },
          { guard: 'lateAnswer', target: 'expired' },
        ],
        expire: { guard: 'runOut', target: 'expired' },
      },
    },
    accepted: { type: 'final' },
    declined: { type: 'final' },
    withdrawn: { type: 'final' },
    expired: { type: 'final' },
  },
});

export type KnockSnapshot = SnapshotFrom<typeof knockMachine>;

/**
 * A knock's first snapshot, its steps (`next === snapshot` when the machine ignored the event),
 * its stored form and the way back.
 */
export const knockCodec = machineCodec(knockMachine);

export function newKnock(input: KnockInput): KnockSnapshot {
  return knockCodec.start(input);
}

export function knockStatus(snapshot: KnockSnapshot): KnockStatus {
  return snapshot.value as KnockStatus;
}

/** The status an agent is shown at `now`: expired from `expires_at` on, swept or not. */
export function shownKnockStatus(stored: KnockStatus, expiresAt: number, now: number): KnockStatus {
  return stored === 'pending' && now >= expiresAt ? 'expired' : stored;
}
