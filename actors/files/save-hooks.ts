import type { Transaction } from '../../storage/driver.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import type { Visibility } from '../../storage/workspaces/workspaces.ts';
import type { IndexEntry } from '../index/capture.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';

/** A version just recorded, in the transaction of its save. */
export interface SavedVersion {
  workspaceId: string;
  visibility: Visibility;
  path: string;
  version: number;
  sha256: string;
  savedAt: Date;
  principal: Principal;
  /** What the index read of the bytes (markdown with a YAML header), or null. */
  index: IndexEntry | null;
  /** The save makes a new listing of the path (post_listing). */
  listing?: { listingId: string } | undefined;
}

/**
 * What another capability does when a file is saved or deleted, in the same transaction: the
 * index keeps its rows of the path, the store its listing. Files know nothing of either; each
 * registers its hook at start-up. A hook that throws refuses the save (nothing is written).
 */
export interface SaveHook {
  /** Answers the changes the save makes beyond `file.saved` (a listing's watchers). */
  saved?(tx: Transaction, services: Services, saved: SavedVersion): Promise<ChangeDraft[]>;
  deleted?(tx: Transaction, services: Services, workspaceId: string, path: string): Promise<void>;
}

const HOOKS = new WeakMap<Services, SaveHook[]>();

/** Adds a hook that runs on every save and delete of these services, after those before it. */
export function addSaveHook(services: Services, hook: SaveHook): void {
  const hooks = HOOKS.get(services) ?? [];
  hooks.push(hook);
  HOOKS.set(services, hooks);
}

/** Runs every hook's `saved`; answers their changes, in order. */
export async function runSaveHooks(
  tx: Transaction,
  services: Services,
  saved: SavedVersion,
): Promise<ChangeDraft[]> {
  const changes: ChangeDraft[] = [];
  for (const hook of HOOKS.get(services) ?? []) {
    if (hook.saved) changes.push(...(await hook.saved(tx, services, saved)));
  }
  return changes;
}

/** Runs every hook's `deleted`. */
export async function runDeleteHooks(
  tx: Transaction,
  services: Services,
  workspaceId: string,
  path: string,
): Promise<void> {
  for (const hook of HOOKS.get(services) ?? [])
    await hook.deleted?.(tx, services, workspaceId, path);
}
