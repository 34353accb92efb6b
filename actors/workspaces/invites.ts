import { inviteMachine, type InviteSnapshot } from '../../machines/invite.ts';
import { duePendingInvites, findInvite, settleInvite } from '../../storage/invites.ts';
import { machineCodec } from '../kernel/machine-actor.ts';
import type { Services } from '../kernel/services.ts';

/** Invites are rows of their workspace, each with its machine: stepped, stored and restored. */
export const invites = machineCodec(inviteMachine);

/** An invite machine's snapshot back from its stored form. */
export function restoreInvite(saved: unknown): InviteSnapshot {
  return invites.restore(saved);
}

/** The stored form of an invite machine's snapshot. */
export function persistInvite(snapshot: InviteSnapshot): unknown {
  return invites.persist(snapshot);
}

const EXPIRY_BATCH = 500;

/**
 * Expires every pending invite whose time has come, each through its workspace's mailbox (the
 * workspace owns its invites). Run by the scheduler; safe to run twice: an invite ends once.
 */
export async function expireDueInvites(services: Services, now: Date): Promise<number> {
  let expired = 0;
  for (;;) {
    const due = await duePendingInvites(services.db(), now, EXPIRY_BATCH);
    for (const { inviteId, workspaceId } of due) {
      const done = await services.workspaces.command(workspaceId, async (_workspace, tx) => {
        const row = await findInvite(tx, inviteId);
        if (!row || row.status !== 'pending') return { result: false };
        const next = invites.step(invites.restore(row.machine), {
          type: 'expire',
          at: now.getTime(),
        });
        if (!next.matches('expired')) return { result: false };
        return { result: await settleInvite(tx, inviteId, 'expired', null, persistInvite(next)) };
      });
      if (done) expired++;
    }
    if (due.length < EXPIRY_BATCH) return expired;
  }
}
