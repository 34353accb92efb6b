import type { StoredBlob } from '../../storage/blobs/blob-store.ts';
import type { Transaction } from '../../storage/driver.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import type { Visibility } from '../../storage/workspaces/workspaces.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';

/**
 * What other capabilities do when a file is saved or deleted: the index reads a markdown
 * file's header and keeps its rows of the path, the store its listing, the agents revoke a token
 * a public file leaks. Files know nothing of any of them; each registers its hook at start-up.
 * A hook may watch a save's bytes as they stream to the blob store (every door's save comes
 * through actors/files/versions.ts), and then acts in the save's transaction on what it saw.
 * A hook that throws refuses the save (nothing is written).
 */

/** A save about to stream its bytes. */
export interface SaveStart {
  services: Services;
  workspaceId: string;
  path: string;
  principal: Principal;
}

/** A hook's watch over one save's bytes. */
export interface BytesWatch<Seen> {
  /** Each chunk, in order; a promise it answers is awaited before the next chunk. */
  see(chunk: Uint8Array): void | Promise<void>;
  /** After the last chunk, the bytes stored: what the hook makes of them. */
  finish(stored: StoredBlob): Seen | Promise<Seen>;
}

/** A version just recorded, in the transaction of its save. */
export interface SavedVersion {
  workspaceId: string;
  visibility: Visibility;
  path: string;
  version: number;
  sha256: string;
  savedAt: Date;
  principal: Principal;
  /** What the hooks' watches made of the bytes. */
  seen: SeenBytes;
  /** The save makes a new listing of the path (post_listing). */
  listing?: { listingId: string } | undefined;
  /** The listing this version is, as a hook before this one recorded it (the store's). */
  listed?: { listingId: string } | undefined;
}

/** What a hook's `saved` adds to the save's commit. */
export interface SaveHookAnswer {
  /** Changes beyond `file.saved` (a listing's watchers, a revoked token's owner). */
  changes?: ChangeDraft[];
  /** The version is this listing (the store recorded it): the hooks after see it as `listed`. */
  listed?: { listingId: string };
  /** Runs in this process once the save has committed. */
  afterCommit?: () => void;
}

export interface SaveHook<Seen = unknown> {
  /** Watches the bytes of every save (optional): `saved` finds the result in `saved.seen`. */
  watch?(save: SaveStart): BytesWatch<Seen>;
  /** Why the file is not in the index, from what was seen: list_files shows it (`index_error`). */
  indexError?(seen: Seen): string | null;
  /**
   * Runs after every hook without it: a hook that acts on what the others recorded (a leaked
   * token's revocation says which listing leaked it).
   */
  afterOthers?: boolean;
  saved?(tx: Transaction, services: Services, saved: SavedVersion): Promise<SaveHookAnswer>;
  deleted?(tx: Transaction, services: Services, workspaceId: string, path: string): Promise<void>;
}

/** Hooks of every kind of `Seen` in one list: each reads back only its own (SeenBytes.of). */
type AnyHook = SaveHook<unknown>;

const HOOKS = new WeakMap<Services, AnyHook[]>();

/** Adds a hook that runs on every save and delete of these services, after those before it. */
export function addSaveHook(services: Services, hook: AnyHook): void {
  const hooks = HOOKS.get(services) ?? [];
  hooks.push(hook);
  HOOKS.set(services, hooks);
}

/** The hooks in the order they run. */
function hooksOf(services: Services): AnyHook[] {
  const hooks = HOOKS.get(services) ?? [];
  return [...hooks.filter((hook) => !hook.afterOthers), ...hooks.filter((h) => h.afterOthers)];
}

/** What every hook's watch made of one save's bytes. */
export class SeenBytes {
  constructor(private readonly byHook: ReadonlyMap<AnyHook, unknown>) {}

  /** What `hook` saw (undefined: it watched no bytes of this save). */
  of<Seen>(hook: SaveHook<Seen>): Seen | undefined {
    return this.byHook.get(hook) as Seen | undefined;
  }

  /** Why the file is not in the index (the file row's `index_error`), or null. */
  get indexError(): string | null {
    for (const [hook, seen] of this.byHook) {
      const error = hook.indexError?.(seen) ?? null;
      if (error !== null) return error;
    }
    return null;
  }
}

/** The watches of every hook over one save's bytes: `see` each chunk, then `finish` once. */
export class SaveWatches {
  private readonly watches: [AnyHook, BytesWatch<unknown>][];

  constructor(save: SaveStart) {
    this.watches = hooksOf(save.services).flatMap((hook) =>
      hook.watch ? [[hook, hook.watch(save)] as [AnyHook, BytesWatch<unknown>]] : [],
    );
  }

  async see(chunk: Uint8Array): Promise<void> {
    for (const [, watch] of this.watches) {
      const pending = watch.see(chunk);
      if (pending) await pending;
    }
  }

  async finish(stored: StoredBlob): Promise<SeenBytes> {
    const byHook = new Map<AnyHook, unknown>();
    for (const [hook, watch] of this.watches) byHook.set(hook, await watch.finish(stored));
    return new SeenBytes(byHook);
  }
}

/** Runs every hook's `saved`, in order; answers their changes and their after-commit steps. */
export async function runSaveHooks(
  tx: Transaction,
  services: Services,
  saved: SavedVersion,
): Promise<{ changes: ChangeDraft[]; afterCommit: () => void }> {
  const changes: ChangeDraft[] = [];
  const afterCommits: (() => void)[] = [];
  let version = saved;
  for (const hook of hooksOf(services)) {
    if (!hook.saved) continue;
    const answer = await hook.saved(tx, services, version);
    changes.push(...(answer.changes ?? []));
    if (answer.afterCommit) afterCommits.push(answer.afterCommit);
    if (answer.listed) version = { ...version, listed: answer.listed };
  }
  return { changes, afterCommit: () => afterCommits.forEach((step) => step()) };
}

/** Runs every hook's `deleted`. */
export async function runDeleteHooks(
  tx: Transaction,
  services: Services,
  workspaceId: string,
  path: string,
): Promise<void> {
  for (const hook of hooksOf(services)) await hook.deleted?.(tx, services, workspaceId, path);
}
