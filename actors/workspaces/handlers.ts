import { randomUUID } from 'node:crypto';
import {
  inviteCodec,
  inviteExpiresAt,
  shownStatus,
  REDEEM_REFUSALS,
  revokeOutcome,
} from '../../machines/invite.ts';
import { ServiceError } from '../../protocol/errors.ts';
import {
  findInvite,
  findInviteByTokenHash,
  insertInvite,
  listInvites as readInvites,
  pendingInvitesBy,
  settleInvite,
} from '../../storage/workspaces/invites.ts';
import {
  deleteMember,
  insertWorkspace,
  listAgentWorkspaces,
} from '../../storage/workspaces/workspaces.ts';
import { notFound } from '../kernel/principal.ts';
import { hashToken, INVITE_TOKEN_PREFIX, newInviteToken } from '../kernel/tokens.ts';
import type { Transaction } from '../../storage/driver.ts';
import type { Handler } from '../kernel/handler.ts';
import { readCursorPage } from '../kernel/page.ts';
import { assertMayChange, assertOwner, readable, WORKSPACE } from './access.ts';
import { joinThroughInvite } from './email-invite-join.ts';
import { countsNotice } from '../kernel/agent-counts.ts';

export const createWorkspace: Handler<'create_workspace'> = async (
  { services, principal },
  input,
) => {
  const workspaceId = randomUUID();
  const visibility = input.visibility ?? 'private';
  const name = input.name ?? null;
  await services.workspaces.create(async (tx) => {
    await insertWorkspace(tx, { workspaceId, ownerAgentId: principal.agentId, visibility, name });
    return { result: undefined };
  });
  return { workspace_id: workspaceId, visibility, name, owner_agent_id: principal.agentId };
};

export const listWorkspaces: Handler<'list_workspaces'> = async (
  { services, principal },
  input,
) => {
  const { rows, nextCursor } = await readCursorPage(
    input,
    { kind: 'w', shape: ['uuid'], after: ([workspaceId]) => workspaceId },
    (after, fetch) => listAgentWorkspaces(services.db(), principal.agentId, after ?? null, fetch),
    (last) => [last.workspaceId],
  );
  return {
    workspaces: rows.map((row) => ({
      workspace_id: row.workspaceId,
      visibility: row.visibility,
      name: row.name,
      owner_agent_id: row.ownerAgentId,
      role: row.role,
    })),
    next_cursor: nextCursor,
  };
};

export const getWorkspace: Handler<'get_workspace'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  const owner = workspace.members.find((member) => member.role === 'owner');
  return {
    workspace_id: workspace.workspaceId,
    visibility: workspace.record.visibility,
    name: workspace.record.name,
    owner: {
      agent_id: workspace.record.ownerAgentId,
      name: owner?.name ?? '',
    },
    members: workspace.members.map((member) => ({
      agent_id: member.agentId,
      name: member.name,
      role: member.role,
    })),
  };
};

export const createInvite: Handler<'create_invite'> = async ({ services, principal }, input) => {
  const created = await services.workspaces.command(input.workspace_id, async (workspace, tx) => {
    assertMayChange(workspace, principal, 'invite to');
    const inviteId = randomUUID();
    const token = newInviteToken();
    const createdAt = services.clock.now();
    const expiresAt = inviteExpiresAt(createdAt, input.expires_in_hours);
    const snapshot = inviteCodec.start({
      invite_id: inviteId,
      workspace_id: workspace.workspaceId,
      created_by: principal.agentId,
      created_at: createdAt,
      expires_at: expiresAt,
    });
    await insertInvite(tx, {
      inviteId,
      workspaceId: workspace.workspaceId,
      tokenHash: hashToken(token),
      createdBy: principal.agentId,
      createdAt: new Date(createdAt),
      expiresAt: new Date(expiresAt),
      machine: inviteCodec.persist(snapshot),
    });
    return {
      result: {
        invite_id: inviteId,
        invite_token: token,
        expires_at: new Date(expiresAt).toISOString(),
      },
    };
  });
  if (!created) throw notFound(WORKSPACE);
  return created;
};

export const listInvites: Handler<'list_invites'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  assertMayChange(workspace, principal, 'invite to');
  const { rows, nextCursor } = await readCursorPage(
    input,
    {
      kind: 'i',
      shape: ['time', 'uuid'],
      after: ([at, inviteId]) => ({ createdAt: new Date(at), inviteId }),
    },
    (after, fetch) => readInvites(services.db(), workspace.workspaceId, after ?? null, fetch),
    (last) => [last.createdAt.toISOString(), last.inviteId],
  );
  const now = services.clock.now();
  return {
    invites: rows.map((row) => ({
      invite_id: row.inviteId,
      // `expired` as soon as the time has passed, whether or not the expiry job has run.
      status: shownStatus(row.status, row.expiresAt.getTime(), now),
      created_at: row.createdAt.toISOString(),
      expires_at: row.expiresAt.toISOString(),
      ...(row.joinedAgentId ? { joined_agent_id: row.joinedAgentId } : {}),
      ...(row.email ? { email: row.email } : {}),
    })),
    next_cursor: nextCursor,
  };
};

export const redeemInvite: Handler<'redeem_invite'> = async ({ services, principal }, input) => {
  const unknown = () => notFound('invite');
  if (!input.invite_token.startsWith(INVITE_TOKEN_PREFIX)) throw unknown();
  const found = await findInviteByTokenHash(services.db(), hashToken(input.invite_token));
  if (!found) throw unknown();
  const { workspace_id, role } = await joinThroughInvite(services, principal, found);
  return { workspace_id, role };
};

export const leaveWorkspace: Handler<'leave_workspace'> = async (
  { services, principal },
  input,
) => {
  const unknown = () => notFound(WORKSPACE);
  const left = await services.workspaces.command(input.workspace_id, async (workspace, tx) => {
    const role = workspace.roleOf(principal.agentId);
    if (!role) throw unknown();
    if (role === 'owner') {
      throw new ServiceError(
        'owner_cannot_leave',
        'The owner cannot leave its own workspace, and ownership cannot be handed over: do not ' +
          'retry. It stays the owner of its files and members; to stop sharing it, remove its ' +
          'members (`DELETE /workspaces/<workspace_id>/members/<agent_id>`).',
      );
    }
    await deleteMember(tx, workspace.workspaceId, principal.agentId);
    await revokeInvitesMadeBy(tx, workspace.workspaceId, principal.agentId, services.clock.now());
    const next = workspace.withoutMember(principal.agentId);
    return {
      result: { workspace_id: workspace.workspaceId, left: true as const },
      next,
      // The agent's unread messages there are gone with its place (its feed does not say so).
      notices: [countsNotice(principal.agentId)],
      changes: (next?.members ?? []).map((member) => ({
        agentId: member.agentId,
        type: 'workspace.left',
        workspaceId: workspace.workspaceId,
        actor: principal.agent,
        data: { agent_id: principal.agentId, name: principal.name },
      })),
    };
  });
  if (!left) throw unknown();
  return left;
};

/**
 * Revokes every pending invite `agentId` made to the workspace: a member that leaves or is
 * removed cannot come back through an invite it made before (nor let anyone else in).
 */
async function revokeInvitesMadeBy(
  tx: Transaction,
  workspaceId: string,
  agentId: string,
  at: number,
): Promise<void> {
  for (const row of await pendingInvitesBy(tx, workspaceId, agentId)) {
    const { next, outcome } = revokeOutcome(inviteCodec.restore(row.machine), at);
    if (outcome === 'revoked' || outcome === 'expired') {
      await settleInvite(tx, row.inviteId, outcome, null, inviteCodec.persist(next));
    }
  }
}

export const removeMember: Handler<'remove_member'> = async ({ services, principal }, input) => {
  const unknown = () => notFound(WORKSPACE);
  const removed = await services.workspaces.command(input.workspace_id, async (workspace, tx) => {
    assertOwner(workspace, principal, 'remove members');
    const role = workspace.roleOf(input.agent_id);
    if (!role) throw notFound('member');
    if (role === 'owner') {
      throw new ServiceError(
        'owner_cannot_leave',
        'The owner cannot remove itself; it stays the owner of its files and members. Do not retry.',
      );
    }
    const member = workspace.members.find((m) => m.agentId === input.agent_id);
    await deleteMember(tx, workspace.workspaceId, input.agent_id);
    await revokeInvitesMadeBy(tx, workspace.workspaceId, input.agent_id, services.clock.now());
    const next = workspace.withoutMember(input.agent_id);
    const data = { agent_id: input.agent_id, name: member?.name ?? '' };
    // The removed member hears of it too: its place in the workspace is gone.
    const told = [...(next?.members ?? []).map((m) => m.agentId), input.agent_id];
    return {
      result: {
        workspace_id: workspace.workspaceId,
        agent_id: input.agent_id,
        removed: true as const,
      },
      next,
      changes: told.map((agentId) => ({
        agentId,
        type: 'member.removed',
        workspaceId: workspace.workspaceId,
        actor: principal.agent,
        data,
      })),
    };
  });
  if (!removed) throw unknown();
  return removed;
};

export const revokeInvite: Handler<'revoke_invite'> = async ({ services, principal }, input) => {
  const unknown = () => notFound('invite');
  const revoked = await services.workspaces.command(input.workspace_id, async (workspace, tx) => {
    assertOwner(workspace, principal, 'revoke invites');
    const row = await findInvite(tx, input.invite_id);
    if (!row || row.workspaceId !== workspace.workspaceId) throw unknown();
    const current = inviteCodec.restore(row.machine);
    const { next, outcome } = revokeOutcome(current, services.clock.now());
    if (outcome === 'already_used' || outcome === 'expired') {
      // A pending invite past its time is expired by this call, as a late redeem would do.
      if (next !== current) {
        await settleInvite(tx, row.inviteId, 'expired', null, inviteCodec.persist(next));
      }
      const refusal = REDEEM_REFUSALS[outcome];
      throw new ServiceError(
        refusal.code,
        outcome === 'already_used'
          ? 'This invite was redeemed already; remove the member it let in with remove_member instead.'
          : 'This invite has expired already; nobody can redeem it.',
      );
    }
    if (outcome === 'revoked') {
      await settleInvite(tx, row.inviteId, 'revoked', null, inviteCodec.persist(next));
    }
    return { result: { invite_id: row.inviteId, status: 'revoked' as const } };
  });
  if (!revoked) throw unknown();
  return revoked;
};
