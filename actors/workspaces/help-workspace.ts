import { randomUUID } from 'node:crypto';
import {
  findPublicWorkspaceNamed,
  lockHelpWorkspace,
} from '../../storage/workspaces/help-workspace.ts';
import { insertWorkspace } from '../../storage/workspaces/workspaces.ts';
import type { Services } from '../kernel/services.ts';

/** The name of the operator's public workspace that agents knock on for help (/help). */
const HELP_WORKSPACE_NAME = 'Help with your agent';

/**
 * The operator's public help workspace, made at the first start: /help names it, and a knock on
 * it reaches the operator. Several processes starting at once make one (an advisory lock).
 */
export async function ensureHelpWorkspace(services: Services): Promise<string> {
  const { operatorId } = services;
  if (!operatorId) {
    throw new Error(
      "The operator's help workspace needs the operator: agents start up before workspaces (actors/capabilities.ts).",
    );
  }
  return services.workspaces.create(async (tx) => {
    await lockHelpWorkspace(tx);
    const found = await findPublicWorkspaceNamed(tx, operatorId, HELP_WORKSPACE_NAME);
    if (found) return { result: found };
    const workspaceId = randomUUID();
    await insertWorkspace(tx, {
      workspaceId,
      ownerAgentId: operatorId,
      visibility: 'public',
      name: HELP_WORKSPACE_NAME,
    });
    return { result: workspaceId };
  });
}
