import { insertIndexedVersion, retireIndexedVersions } from '../../storage/file-index.ts';
import type { SaveHook } from '../files/save-hooks.ts';

/**
 * The index follows every save and delete: a path's earlier rows retire, and a version whose
 * YAML header the index read becomes the path's row (seen by whom its workspace shows it to).
 */
export const indexSaveHook: SaveHook = {
  async saved(tx, _services, saved) {
    await retireIndexedVersions(tx, saved.workspaceId, saved.path);
    if (saved.index && !('error' in saved.index)) {
      await insertIndexedVersion(tx, {
        workspaceId: saved.workspaceId,
        path: saved.path,
        version: saved.version,
        sha256: saved.sha256,
        authorId: saved.principal.agentId,
        savedAt: saved.savedAt,
        visibility: saved.visibility,
        ...saved.index,
      });
    }
    return [];
  },
  async deleted(tx, _services, workspaceId, path) {
    await retireIndexedVersions(tx, workspaceId, path);
  },
};
