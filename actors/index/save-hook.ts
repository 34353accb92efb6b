import { addIndexedUse } from '../../storage/files/indexed-use.ts';
import {
  insertIndexedVersion,
  letGoIndexedVersions,
  retireIndexedVersions,
} from '../../storage/index/file-index.ts';
import { assertWithinQuota } from '../files/quota.ts';
import type { SavedVersion, SaveHook } from '../files/save-hooks.ts';
import { IndexCapture, type IndexEntry } from './capture.ts';

/**
 * The index follows every save and delete. It watches each save's bytes (./capture.ts), and
 * a version whose YAML header it read becomes the path's row (seen by whom its workspace shows
 * it to); a header it could not read leaves the file's `index_error`. A path's earlier rows
 * retire. What the row keeps of the header (its fields, at most INDEX_FIELDS_MAX_BYTES) counts
 * against the author's quota as the version's bytes do (rule `every_kept_byte`): from its save,
 * refused past the quota with the save, until a delete gives back every version of the path:
 * the rows then keep only who saved which version when, and none of the header or text
 * (nothing is kept that no quota counts).
 */
export const indexSaveHook: SaveHook<IndexEntry | null> = {
  watch: ({ path }) => new IndexCapture(path),
  indexError: (entry) => (entry && 'error' in entry ? entry.error : null),
  async saved(tx, services, saved) {
    await retireIndexedVersions(tx, saved.workspaceId, saved.path);
    const entry = indexEntryOf(saved);
    if (entry && !('error' in entry)) {
      const author = saved.principal.agentId;
      const keptBytes = await insertIndexedVersion(tx, {
        workspaceId: saved.workspaceId,
        path: saved.path,
        version: saved.version,
        sha256: saved.sha256,
        authorId: author,
        savedAt: saved.savedAt,
        visibility: saved.visibility,
        ...entry,
      });
      // The saver's use row is already locked by this save (actors/files/versions.ts).
      await addIndexedUse(tx, author, keptBytes);
      await assertWithinQuota(tx, services, author);
    }
    return {};
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

/** What the index read of a saved version (markdown with a YAML header), or null. */
export function indexEntryOf(saved: SavedVersion): IndexEntry | null {
  return saved.seen.of(indexSaveHook) ?? null;
}
