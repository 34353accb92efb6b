import { workspaceNames } from '../../storage/workspaces/workspace-names.ts';
import { lockWorkspace } from '../../storage/workspaces/workspaces.ts';
import type { Capability } from '../kernel/capability.ts';
import type { ActorRegistry } from '../kernel/registry.ts';
import { loadWorkspaceActor, type WorkspaceActor } from './actor.ts';
import {
  createInvite,
  createWorkspace,
  getWorkspace,
  leaveWorkspace,
  listInvites,
  listWorkspaces,
  redeemInvite,
  removeMember,
  revokeInvite,
} from './handlers.ts';
import { inviteByEmail, viewInvite } from './email-invite-handlers.ts';
import { expireDueInvites } from './invites.ts';
import { workspaceScopeTarget } from './access.ts';
import { ensureHelpWorkspace } from './help-workspace.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /** Every workspace, live while in use: its record and members. */
    readonly workspaces: ActorRegistry<WorkspaceActor>;
    /** The operator's public workspace of help documents (made at start-up). */
    readonly helpWorkspaceId: string;
  }
}

/** Workspaces, their members and invites; the operator's help workspace. */
export const workspaces = {
  name: 'workspaces',
  handlers: {
    create_workspace: createWorkspace,
    list_workspaces: listWorkspaces,
    get_workspace: getWorkspace,
    create_invite: createInvite,
    list_invites: listInvites,
    invite_by_email: inviteByEmail,
    view_invite: viewInvite,
    redeem_invite: redeemInvite,
    leave_workspace: leaveWorkspace,
    remove_member: removeMember,
    revoke_invite: revokeInvite,
  },
  actors: [
    {
      kind: 'workspace',
      registry: 'workspaces',
      // Members are named through the agents' port (actors/workspaces/provided-sql.ts).
      load: (workspaceId, db, services) =>
        loadWorkspaceActor(db, workspaceId, services.agentNameSql),
      lock: (workspaceId, tx) => lockWorkspace(tx, workspaceId),
      // Joins and invites decide from the members in memory: check the copy before deciding.
      // File commands rely on the lock too: a path's version numbers and the workspace's
      // receipt chain are ordered by it (actors/receipts/chain.ts).
      lockFirst: true,
    },
  ],
  jobs: [
    {
      // Pending invites past their time are expired (list_invites shows them at once).
      name: 'invites.expire',
      schedule: '* * * * *',
      purpose: 'when pending invites past their time are recorded expired',
      run: async (services, now) => void (await expireDueInvites(services, now)),
    },
  ],
  scopeTargets: [workspaceScopeTarget],
  documentValues: (services) => ({ help_workspace_id: services.helpWorkspaceId }),
  // The operator is made by the agents' start-up step, before this one (actors/capabilities.ts).
  async startUp(services) {
    // Email digests name workspaces through this port (actors/email/notifications/digest-names.ts).
    services.provide('workspaceNames', workspaceNames);
    services.provide('helpWorkspaceId', await ensureHelpWorkspace(services));
  },
} satisfies Capability;
