import { inviteCodec } from '../../machines/invite.ts';
import { duePendingInvites, findInvite, settleInvite } from '../../storage/workspaces/invites.ts';
import type { Services } from '../kernel/services.ts';

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
        const next = inviteCodec.step(inviteCodec.restore(row.machine), {
          type: 'expire',
          at: now.getTime(),
        });
        if (!next.matches('expired')) return { result: false };
        return {
          result: await settleInvite(tx, inviteId, 'expired', null, inviteCodec.persist(next)),
        };
      });
      if (done) expired++;
    }
    if (due.length < EXPIRY_BATCH) return expired;
  }
}
