import { assign, setup, type SnapshotFrom } from 'xstate';
import { DEFAULT_INVITE_HOURS } from '../protocol/workspaces/invite-limits.ts';
import { machineCodec } from './codec.ts';

/**
 * An invite to a workspace: a single-use token that one agent redeems to join, that runs out,
 * or that is taken back (by the owner, or because its maker left or was removed from the
 * workspace). pending -> joined | expired | revoked, and every end is final. Time is never read here: every
 * event carries its own `at` (milliseconds since the epoch), taken by actors/ from their Clock.
 */
export interface InviteContext {
  invite_id: string;
  workspace_id: string;
  /** The agent that made the invite. */
  created_by: string;
  /** Milliseconds since the epoch. */
  created_at: number;
  /** Milliseconds since the epoch; from this millisecond on, the invite cannot be redeemed. */
  expires_at: number;
  /** The agent that redeemed it, once joined. */
  joined_agent_id?: string;
}

export type InviteInput = Omit<InviteContext, 'joined_agent_id'>;

export type InviteEvent =
  | { type: 'redeem'; agentId: string; at: number }
  | { type: 'expire'; at: number }
  | { type: 'revoke'; at: number };

export type InviteStatus = 'pending' | 'joined' | 'expired' | 'revoked';

export { DEFAULT_INVITE_HOURS } from '../protocol/workspaces/invite-limits.ts';

export const inviteMachine = setup({
  types: {
    context: {} as InviteContext,
    events: {} as InviteEvent,
    input: {} as InviteInput | undefined,
  },
  guards: {
    // The expiry millisecond itself is already too late: `at < expires_at` joins, nothing else.
    inTime: ({ context, event }) => event.at < context.expires_at,
    runOut: ({ context, event }) => event.at >= context.expires_at,
  },
}).createMachine({
  id: 'invite',
  // xstate's pure `transition` makes its scratch actor without input: that must not throw.
  context: ({ input }) => ({
    invite_id: input?.invite_id ?? '',
    workspace_id: input?.workspace_id ?? '',
    created_by: input?.created_by ?? '',
    created_at: input?.created_at ?? 0,
    expires_at: input?.expires_at ?? 0,
  }),
  initial: 'pending',
  states: {
    pending: {
      on: {
        redeem: [
          {
            guard: 'inTime',
            target: 'joined',
            actions: assign({
              joined_agent_id: ({ event }) => event.agentId,
            }),
          },
          // A redeem that comes too late is how an invite nobody swept finds out it expired.
          { target: 'expired' },
        ],
        expire: { guard: 'runOut', target: 'expired' },
        revoke: { target: 'revoked' },
      },
    },
    joined: { type: 'final' },
    expired: { type: 'final' },
    revoked: { type: 'final' },
  },
});

export type InviteSnapshot = SnapshotFrom<typeof inviteMachine>;

/** An invite's first snapshot, its steps, its stored form and the way back. */
export const inviteCodec = machineCodec(inviteMachine);

/** The invite's state as the machine holds it (the expiry job may not have run yet). */
export function storedStatus(snapshot: InviteSnapshot): InviteStatus {
  if (snapshot.matches('joined')) return 'joined';
  if (snapshot.matches('expired')) return 'expired';
  if (snapshot.matches('revoked')) return 'revoked';
  return 'pending';
}

/**
 * The status an agent is shown at `now`: `expired` as soon as `expires_at` has passed, whether
 * or not the expiry job has run (protocol/documents/protocol.md, "Workspaces and invites").
 */
export function inviteStatus(snapshot: InviteSnapshot, now: number): InviteStatus {
  return shownStatus(storedStatus(snapshot), snapshot.context.expires_at, now);
}

/** The same rule from a stored status and expiry, for lists read from the table. */
export function shownStatus(stored: InviteStatus, expiresAt: number, now: number): InviteStatus {
  return stored === 'pending' && now >= expiresAt ? 'expired' : stored;
}

/** When an invite made at `createdAt` for `hours` runs out (fractions of an hour allowed). */
export function inviteExpiresAt(createdAt: number, hours: number = DEFAULT_INVITE_HOURS): number {
  return createdAt + Math.round(hours * 3_600_000);
}

export type RedeemOutcome = 'joined' | 'already_used' | 'expired' | 'revoked';

/**
 * One redeem, decided purely. `next` is the snapshot to persist: the joined invite, the invite
 * expired by this late redeem, or (already used, already expired) the snapshot unchanged, so
 * `next === snapshot` means there is nothing to write.
 */
export function redeemOutcome(
  snapshot: InviteSnapshot,
  event: Extract<InviteEvent, { type: 'redeem' }>,
): { next: InviteSnapshot; outcome: RedeemOutcome } {
  if (snapshot.matches('joined')) return { next: snapshot, outcome: 'already_used' };
  if (snapshot.matches('expired')) return { next: snapshot, outcome: 'expired' };
  if (snapshot.matches('revoked')) return { next: snapshot, outcome: 'revoked' };
  const next = inviteCodec.step(snapshot, event);
  return { next, outcome: next.matches('joined') ? 'joined' : 'expired' };
}

/**
 * The error each refused redeem answers (protocol.md, redeem_invite). The codes are not yet in
 * protocol/errors.ts: they join it with the route that answers them.
 */
export const REDEEM_REFUSALS = {
  already_used: {
    code: 'invite_already_used',
    status: 409,
    detail: 'This invite has been redeemed already; each invite admits one agent.',
  },
  expired: {
    code: 'invite_expired',
    status: 410,
    detail: 'This invite has expired; ask a member of the workspace for a new one.',
  },
  revoked: {
    code: 'invite_revoked',
    status: 410,
    detail:
      'This invite was taken back (by the owner, or because the member who made it left); ask a member of the workspace for a new one.',
  },
} as const satisfies Record<Exclude<RedeemOutcome, 'joined'>, unknown>;

export type RevokeOutcome = 'revoked' | 'already_revoked' | 'already_used' | 'expired';

/**
 * One revoke at `at`, decided purely: only a pending invite still in time is revoked (`next`
 * to persist); one past its time is expired by the revoke, as a late redeem would find it.
 */
export function revokeOutcome(
  snapshot: InviteSnapshot,
  at: number,
): { next: InviteSnapshot; outcome: RevokeOutcome } {
  if (snapshot.matches('revoked')) return { next: snapshot, outcome: 'already_revoked' };
  if (snapshot.matches('joined')) return { next: snapshot, outcome: 'already_used' };
  if (snapshot.matches('expired')) return { next: snapshot, outcome: 'expired' };
  if (at >= snapshot.context.expires_at) {
    const next = inviteCodec.step(snapshot, { type: 'expire', at });
    return { next, outcome: 'expired' };
  }
  const next = inviteCodec.step(snapshot, { type: 'revoke', at });
  return { next, outcome: 'revoked' };
}
