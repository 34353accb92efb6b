import {
  addIndexedUse,
  insertIndexedVersion,
  letGoIndexedVersions,
  retireIndexedVersions,
} from '../../storage/index/file-index.ts';
import { assertWithinQuota } from '../files/quota.ts';
import type { SaveHook } from '../files/save-hooks.ts';

/**
 * The index follows every save and delete: a path's earlier rows retire, and a version whose
 * YAML header the index read becomes the path's row (seen by whom its workspace shows it to).
 * What the row keeps of the header (its fields, at most INDEX_FIELDS_MAX_BYTES) counts against
 * the author's quota as the version's bytes do (rule `every_kept_byte`): from its save, refused
 * past the quota with the save, until a delete gives back every version of the path: the rows
 * then keep only who saved which version when, and none of the header or text (nothing is kept
 * that no quota counts).
 */
export const indexSaveHook: SaveHook = {
  async saved(tx, services, saved) {
    await retireIndexedVersions(tx, saved.workspaceId, saved.path);
    if (saved.index && !('error' in saved.index)) {
      const author = saved.principal.agentId;
      const keptBytes = await insertIndexedVersion(tx, {
        workspaceId: saved.workspaceId,
        path: saved.path,
        version: saved.version,
        sha256: saved.sha256,
        authorId: author,
        savedAt: saved.savedAt,
        visibility: saved.visibility,
        ...saved.index,
      });
      // The saver's use row is already locked by this save (actors/files/versions.ts).
      await addIndexedUse(tx, author, keptBytes);
      await assertWithinQuota(tx, services, author);
    }
    return [];
  },
  async deleted(tx, _services, workspaceId, path) {
    await retireIndexedVersions(tx, workspaceId, path);
    // Every author here saved a version the delete just let go, so their use rows are already
    // locked by it; agent-id order all the same, as every change of use takes them.
    const released = await letGoIndexedVersions(tx, workspaceId, path);
    for (const author of [...released.keys()].sort()) {
      await addIndexedUse(tx, author, -(released.get(author) ?? 0));
    }
  },
};
