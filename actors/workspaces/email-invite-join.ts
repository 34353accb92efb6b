import {
  inviteCodec,
  redeemOutcome,
  REDEEM_REFUSALS,
  type RedeemOutcome,
} from '../../machines/invite.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { findInvite, settleInvite } from '../../storage/workspaces/invites.ts';
import { insertMember } from '../../storage/workspaces/workspaces.ts';
import type { Transaction } from '../../storage/driver.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';

/** What joining through an invite came to: the caller's role in the workspace. */
export interface Joined {
  workspace_id: string;
  role: 'owner' | 'member';
  /** False when the caller was in already: the invite stays unused for whoever it was meant for. */
  joined: boolean;
}

/**
 * Joins `principal` to the workspace of an invite already found (by its token: redeem_invite;
 * by its reply address: an email invite's reply), in the workspace's mailbox, with every
 * member told `invite.joined`. `alsoInTransaction` runs in the same transaction after the join
 * (an email reply's new mail account and its answer: all commit together, or none does). A
 * refused join throws the redeem refusals (409 invite_already_used, 410 invite_expired, 410
 * invite_revoked); an invite or workspace gone, 404 `invite`.
 *
 * (Shared by the token and the email paths; named for the email invites only because of the
 * helpers' file fences: its natural name is invite-join.ts.)
 */
export async function joinThroughInvite(
  services: Services,
  principal: Principal,
  invite: { inviteId: string; workspaceId: string },
  alsoInTransaction?: (tx: Transaction, joined: Joined) => Promise<void>,
): Promise<Joined> {
  const unknown = () => notFound('invite');
  const joined = await services.workspaces.command(invite.workspaceId, async (workspace, tx) => {
    const role = workspace.roleOf(principal.agentId);
    // Already in: the invite stays unused for whoever it was meant for.
    if (role) {
      const result = { workspace_id: workspace.workspaceId, role, joined: false };
      await alsoInTransaction?.(tx, result);
      return { result };
    }
    const row = await findInvite(tx, invite.inviteId);
    if (!row) throw unknown();
    const { next, outcome } = redeemOutcome(inviteCodec.restore(row.machine), {
      type: 'redeem',
      agentId: principal.agentId,
      at: services.clock.now(),
    });
    if (outcome !== 'joined') throw refusal(outcome);
    const stored = inviteCodec.persist(next);
    if (!(await settleInvite(tx, row.inviteId, 'joined', principal.agentId, stored))) {
      throw refusal('already_used');
    }
    await insertMember(
      tx,
      workspace.workspaceId,
      principal.agentId,
      'member',
      services.unreadOnJoinSql,
    );
    const after = workspace.withMember({
      agentId: principal.agentId,
      name: principal.name,
      role: 'member',
    });
    const members = after?.members ?? workspace.members;
    const result = { workspace_id: workspace.workspaceId, role: 'member' as const, joined: true };
    await alsoInTransaction?.(tx, result);
    return {
      result,
      next: after,
      changes: members.map((member) => ({
        agentId: member.agentId,
        type: 'invite.joined',
        workspaceId: workspace.workspaceId,
        actor: principal.agent,
        data: {
          invite_id: row.inviteId,
          agent_id: principal.agentId,
          name: principal.name,
          role: 'member',
        },
      })),
    };
  });
  if (!joined) throw unknown();
  return joined;
}

function refusal(outcome: Exclude<RedeemOutcome, 'joined'>): ServiceError {
  const { code, detail } = REDEEM_REFUSALS[outcome];
  return new ServiceError(code, detail);
}
