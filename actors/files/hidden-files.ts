import { withheldPaths } from '../../storage/files/files.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import type { WorkspaceActor } from '../workspaces/actor.ts';

/**
 * May this principal see this file: the one rule every read of a workspace's files goes through
 * (issue 32 §3). A listing the operator hid is out of the store and the index, and its file
 * (every version) is withheld from everyone but the workspace's members, as a file that does not
 * exist: a read answers the same 404, a list leaves it out, a deal cannot pin it, a receipt of it
 * is not listed. Its members still read and change it (the file stays in its workspace). What is
 * withheld is written once, in SQL (index_row_withheld, migration 039): lists ask it in their
 * own statement (`outsider`), single paths through withheldPaths.
 */

/** Whether the caller is outside the workspace: moderation's withholding applies to it. */
export function isOutsider(workspace: WorkspaceActor, principal: Principal): boolean {
  return workspace.roleOf(principal.agentId) === undefined;
}

/** The paths of `paths` the caller may not see (none for a member). */
export async function hiddenFrom(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  paths: readonly string[],
  db = services.db(),
): Promise<Set<string>> {
  if (!isOutsider(workspace, principal)) return new Set();
  return withheldPaths(db, workspace.workspaceId, paths);
}

/** Refuses a file the caller may not see with the 404 of `resource`, as a missing one. */
export async function assertFileNotHidden(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  path: string,
  resource: string,
): Promise<void> {
  if ((await hiddenFrom(services, principal, workspace, [path])).size > 0) {
    throw notFound(resource);
  }
}
