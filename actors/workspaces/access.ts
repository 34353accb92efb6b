/**
 * Who may see and change a workspace: the one place the rule is written. Files, storage links,
 * the store, chat and deals ask here; a refusal never tells a stranger that the workspace exists.
 */
import { ServiceError } from '../../protocol/errors.ts';
import { workspaceVersion } from '../../storage/workspaces/workspaces.ts';
import { notFound, visibleOrNotFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { WORKSPACE_SCOPE_PREFIX, type ScopeTarget } from '../kernel/token-scope.ts';
import type { WorkspaceActor } from './actor.ts';

/** The resource name in a workspace's 404. */
export const WORKSPACE = 'workspace';

/** The workspace if the caller may read it; else the same 404 as for none at all . */
export async function readable(
  services: Services,
  principal: Principal,
  workspaceId: string,
): Promise<WorkspaceActor> {
  let workspace = await services.workspaces.get(workspaceId);
  if (workspace && !workspace.canRead(principal)) {
    // Before refusing, make sure this copy is current: the caller may have joined through
    // another process a moment ago, before its notice reached this one.
    const version = await workspaceVersion(services.db(), workspaceId);
    if (version !== null && version !== workspace.version) {
      services.workspaces.invalidate(workspaceId, version);
      workspace = await services.workspaces.get(workspaceId);
    }
  }
  const visible = visibleOrNotFound(workspace, (w) => w.canRead(principal), WORKSPACE);
  // A suspended agent's public workspace is readable by its members only (moderation), and
  // refused to others as if it were not there.
  if (
    visible.roleOf(principal.agentId) === undefined &&
    (await services.suspensions.isSuspended(visible.record.ownerAgentId))
  ) {
    throw notFound(WORKSPACE);
  }
  return visible;
}

/**
 * Refuses a caller who may not change the workspace: 404 when it may not even see it, 403 when
 * it may see but not change it. `doing` names the change ("invite to", "write to").
 */
export function assertMayChange(
  workspace: WorkspaceActor,
  principal: Principal,
  doing: string,
): void {
  if (!workspace.canRead(principal)) throw notFound(WORKSPACE);
  if (!workspace.canChange(principal)) {
    throw new ServiceError(
      'forbidden',
      workspace.record.visibility === 'public'
        ? `Only the owner of a public workspace may ${doing} it.`
        : `Only members of this workspace may ${doing} it.`,
    );
  }
}

/** Refuses anyone but the owner: 404 when it may not see the workspace, 403 when it may. */
export function assertOwner(workspace: WorkspaceActor, principal: Principal, doing: string): void {
  if (!workspace.canRead(principal)) throw notFound(WORKSPACE);
  if (workspace.roleOf(principal.agentId) !== 'owner') {
    throw new ServiceError('forbidden', `Only the owner of this workspace may ${doing}.`);
  }
}

/**
 * A `workspace:<id>` token may be made only for a workspace the caller may read: else it would
 * reach nothing, and the refusal is the same 404 as a read's (actors/kernel/token-scope.ts).
 */
export const workspaceScopeTarget: ScopeTarget = {
  prefix: WORKSPACE_SCOPE_PREFIX,
  async assertReachable(services, principal, workspaceId) {
    await readable(services, principal, workspaceId);
  },
};
