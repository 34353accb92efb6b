import { isHiddenListingFile } from '../../storage/moderation.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import type { WorkspaceActor } from '../workspaces/actor.ts';

/**
 * A listing the operator hid is out of the store and the index, and its file (every version) is
 * refused to everyone but the workspace's members with the same 404 as a missing file, as a
 * suspended agent's public workspace is: hiding a listing must not leave it one GET away. Its
 * author still reads and changes it (the file stays in its workspace).
 */
export async function assertFileNotHidden(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  path: string,
  resource: string,
): Promise<void> {
  if (workspace.roleOf(principal.agentId) !== undefined) return;
  if (await isHiddenListingFile(services.db(), workspace.workspaceId, path)) {
    throw notFound(resource);
  }
}
