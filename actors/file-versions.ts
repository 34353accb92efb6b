import { randomUUID } from 'node:crypto';
import { MAX_FILE_BYTES } from '../protocol/files.ts';
import type { ByteBody } from '../protocol/binding.ts';
import { ServiceError } from '../protocol/errors.ts';
import type { StoredBlob } from '../storage/blobs/blob-store.ts';
import {
  BlobStoreFullError,
  BlobStoreUnavailableError,
  BlobTooLargeError,
} from '../storage/blobs/errors.ts';
import type { Transaction } from '../storage/driver.ts';
import {
  addStorageUse,
  findFile,
  forgetOlderBytes,
  removeFile,
  insertFileVersion,
  lastVersion,
  readLastReceipt,
  readHeldBytes,
  upsertFile,
  writeLastReceipt,
} from '../storage/files.ts';
import { insertIndexedVersion, retireIndexedVersions } from '../storage/file-index.ts';
import { holdBlob } from './blob-collector.ts';
import { contentTypeOf } from './content-type.ts';
import { listingDeleted, listingSaved } from './listings.ts';
import { hasYamlHeader, indexEntry, INDEX_MAX_BYTES, type IndexEntry } from './markdown-index.ts';
import { notFound, type Principal } from './principal.ts';
import { issueReceipt, type FileReceipt, type SignedReceipt } from './receipts.ts';
import type { Services } from './services.ts';
import type { WorkspaceActor } from './workspace-actor.ts';
import { assertMayChange } from './handlers/workspaces.ts';

/**
 * Versions of files: how bytes become a saved version with its receipt, and what a save or a
 * delete records. Every door that saves (PUT, MCP, storage links and their blocks) comes here.
 */

/** Bytes already in the blob store, about to become a version of a path. */
export interface StoredFile extends StoredBlob {
  /** Markdown with a YAML header: every version's bytes are kept. */
  keepsEveryVersion: boolean;
  /** What the index keeps of it (markdown with a YAML header), or null. */
  index: IndexEntry | null;
}

/**
 * Watches a file's bytes go by on their way to the blob store and keeps what the index reads:
 * the first bytes of any file (is it markdown with a YAML header?), and a markdown file whole,
 * up to the index's cap.
 */
export class IndexCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private readonly wanted: number;

  constructor(private readonly path: string) {
    this.wanted = /\.md$/i.test(path) ? INDEX_MAX_BYTES + 1 : 5;
  }

  see(chunk: Uint8Array): void {
    const want = this.wanted - this.kept;
    if (want <= 0) return;
    const part = Buffer.from(chunk.subarray(0, want));
    this.chunks.push(part);
    this.kept += part.length;
  }

  /** The stored blob as a file: which versions it keeps, and its index entry. */
  file(stored: StoredBlob): StoredFile {
    const bytes = Buffer.concat(this.chunks);
    const header = hasYamlHeader(this.path, bytes.subarray(0, 5));
    return {
      ...stored,
      keepsEveryVersion: header,
      index: header ? indexEntry(bytes, stored.size) : null,
    };
  }
}

/** Blob-store failures as the caller sees them. */
export function blobFailure(error: unknown, maxBytes: number): unknown {
  if (error instanceof BlobTooLargeError) {
    return new ServiceError(
      'payload_too_large',
      maxBytes === MAX_FILE_BYTES
        ? `A file may be at most ${MAX_FILE_BYTES} bytes (100 MB) per PUT; larger files go through a storage link (get_storage_link).`
        : `This upload may be at most ${maxBytes} bytes.`,
      { limit_bytes: maxBytes },
    );
  }
  if (error instanceof BlobStoreFullError || error instanceof BlobStoreUnavailableError) {
    return new ServiceError(
      'storage_unavailable',
      "The service's file storage cannot take bytes just now; nothing was saved. Retry later.",
    );
  }
  return error;
}

/**
 * Moves bytes of use between agents, in agent-id order (two saves over each other's files
 * in two workspaces never lock the two rows in opposite orders), and refuses past the quota.
 */
export async function moveStorageUse(
  tx: Transaction,
  services: Services,
  deltas: Map<string, number>,
  saver: string,
): Promise<Map<string, number>> {
  const used = new Map<string, number>();
  for (const agentId of [...deltas.keys()].sort()) {
    used.set(agentId, await addStorageUse(tx, agentId, deltas.get(agentId) ?? 0));
  }
  if ((used.get(saver) ?? 0) > services.storageQuotaBytes && (deltas.get(saver) ?? 0) > 0) {
    throw quotaExceeded(services);
  }
  return used;
}

export function quotaExceeded(services: Services): ServiceError {
  return new ServiceError(
    'quota_exceeded',
    `This save would take your storage past its ${services.storageQuotaBytes} bytes. Delete files you no longer need, then retry.`,
    { quota_bytes: services.storageQuotaBytes },
  );
}

function fileChange(
  workspace: WorkspaceActor,
  principal: Principal,
  type: 'file.saved' | 'file.deleted',
  receipt: FileReceipt,
) {
  return workspace.members.map((member) => ({
    agentId: member.agentId,
    type,
    workspaceId: workspace.workspaceId,
    actor: principal.agent,
    data: {
      path: receipt.path,
      version: receipt.version,
      size: receipt.size,
      sha256: receipt.sha256,
      receipt_id: receipt.receipt_id,
    },
  }));
}

/**
 * Records one version of a path (a save or a delete) in the command's transaction: its receipt,
 * signed and chained after the workspace's last one, the version row, and the new last receipt.
 */
export async function recordVersion(
  tx: Transaction,
  services: Services,
  workspace: WorkspaceActor,
  principal: Principal,
  version: {
    path: string;
    version: number;
    action: 'save' | 'delete';
    sha256: string;
    size: number;
    bytesKept: boolean;
  },
): Promise<{ signed: FileReceipt; savedAt: Date }> {
  const savedAt = new Date(services.clock.now());
  const signed: FileReceipt = await issueReceipt(
    tx,
    services.files.signingKeys,
    {
      receipt_id: randomUUID(),
      workspace_id: workspace.workspaceId,
      path: version.path,
      action: version.action,
      version: version.version,
      size: version.size,
      sha256: version.sha256,
      agent_id: principal.agentId,
      agent_name: principal.name,
      saved_at: savedAt.toISOString(),
    },
    (await readLastReceipt(tx, workspace.workspaceId)) as SignedReceipt | null,
  );
  await insertFileVersion(tx, {
    workspaceId: workspace.workspaceId,
    ...version,
    agentId: principal.agentId,
    savedAt,
    receipt: signed,
  });
  await writeLastReceipt(tx, workspace.workspaceId, signed);
  return { signed, savedAt };
}

/** What a file command answers: the receipt, one change per member, the storage use after. */
export function outcome(
  services: Services,
  workspace: WorkspaceActor,
  principal: Principal,
  type: 'file.saved' | 'file.deleted',
  signed: FileReceipt,
  used: Map<string, number>,
) {
  return {
    result: signed,
    // The receipt chain is the workspace's: file commands take their turn in its row's order.
    next: workspace.unchanged,
    changes: fileChange(workspace, principal, type, signed),
    afterCommit: () => {
      for (const [agentId, bytes] of used) services.storageUse.set(agentId, bytes);
    },
  };
}

/**
 * Streams a file's bytes into the blob store, hashing them, with no database connection held
 * meanwhile. The caller's room left in its quota (replacing its own file gives that file's
 * bytes back) caps the upload: a declared length past it is refused before a byte is read, and
 * a body without one is stopped as soon as it passes it. The commit checks again, exactly, so
 * concurrent uploads never take more than the quota between them.
 */
export async function storeFileBytes(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  path: string,
  body: ByteBody,
  options: { maxBytes: number; signal?: AbortSignal },
): Promise<StoredFile> {
  // Blocks staged through storage links hold room too, until committed or expired.
  const held = await readHeldBytes(services.db(), {
    workspaceId: workspace.workspaceId,
    path,
    agentId: principal.agentId,
    now: new Date(services.clock.now()),
  });
  const room = services.storageQuotaBytes - held.used - held.staged + held.replaced;
  if (body.declaredLength !== null && body.declaredLength > room) throw quotaExceeded(services);
  const maxBytes = Math.max(0, Math.min(options.maxBytes, room));
  const capture = new IndexCapture(path);
  const source = (async function* () {
    for await (const chunk of body) {
      capture.see(chunk);
      yield chunk;
    }
  })();
  const stored = await services.files.blobs
    .put(source, { maxBytes, ...(options.signal && { signal: options.signal }) })
    .catch((error: unknown) => {
      if (error instanceof BlobTooLargeError && maxBytes < options.maxBytes) {
        throw quotaExceeded(services);
      }
      throw blobFailure(error, options.maxBytes);
    });
  return capture.file(stored);
}

/** What else a save does in its transaction. */
export interface SaveOptions {
  /**
   * Checked first, against the file as it is in the transaction (null: none): throws to save
   * nothing (the conditional headers of Azure clients: `If-None-Match: *`, `If-Match`).
   */
  precondition?: (current: { sha256: string } | null) => void;
  /** Runs last, in the same transaction (a block commit drops its staged blocks there). */
  alsoInTx?: (tx: Transaction) => Promise<void>;
  /** The save makes a new listing of the path (post_listing); saves of a listing are checked. */
  listing?: { listingId: string };
}

/**
 * Records bytes already stored as the next version of `path`, in one workspace command: the
 * storage use moved (and the quota held), the signed receipt, the version row, the file row,
 * a `file.saved` change for every member.
 */
export async function commitSave(
  services: Services,
  principal: Principal,
  workspaceId: string,
  path: string,
  stored: StoredFile,
  options: SaveOptions = {},
): Promise<FileReceipt> {
  const receipt = await services.workspaces.command(workspaceId, async (workspace, tx) => {
    assertMayChange(workspace, principal, 'write to');
    const current = await findFile(tx, workspace.workspaceId, path);
    options.precondition?.(current);
    // The bytes were stored before this transaction: make sure the collector has not taken them.
    await holdBlob(tx, services.files.blobs, stored.sha256);
    const version = (await lastVersion(tx, workspace.workspaceId, path)) + 1;
    const deltas = new Map<string, number>([[principal.agentId, stored.size]]);
    if (current) deltas.set(current.savedBy, (deltas.get(current.savedBy) ?? 0) - current.size);
    const used = await moveStorageUse(tx, services, deltas, principal.agentId);
    const { signed, savedAt } = await recordVersion(tx, services, workspace, principal, {
      path,
      version,
      action: 'save',
      sha256: stored.sha256,
      size: stored.size,
      bytesKept: true,
    });
    if (!stored.keepsEveryVersion) await forgetOlderBytes(tx, workspace.workspaceId, path, version);
    await upsertFile(tx, {
      workspaceId: workspace.workspaceId,
      path,
      version,
      sha256: stored.sha256,
      size: stored.size,
      contentType: contentTypeOf(path),
      savedAt,
      savedBy: principal.agentId,
      indexError: stored.index && 'error' in stored.index ? stored.index.error : null,
    });
    await retireIndexedVersions(tx, workspace.workspaceId, path);
    if (stored.index && !('error' in stored.index)) {
      await insertIndexedVersion(tx, {
        workspaceId: workspace.workspaceId,
        path,
        version,
        sha256: stored.sha256,
        authorId: principal.agentId,
        savedAt,
        visibility: workspace.record.visibility,
        ...stored.index,
      });
    }
    const listingChanges = await listingSaved(tx, services, principal, {
      workspaceId: workspace.workspaceId,
      path,
      version,
      savedAt,
      public: workspace.record.visibility === 'public',
      index: stored.index,
      declared: options.listing,
    });
    await options.alsoInTx?.(tx);
    const done = outcome(services, workspace, principal, 'file.saved', signed, used);
    return { ...done, changes: [...done.changes, ...listingChanges] };
  });
  if (!receipt) throw notFound('workspace');
  return receipt;
}

/**
 * Deletes the current version of `path` in one workspace command: the storage use given back,
 * a signed receipt (carrying the size and fingerprint of the version that goes), a listing
 * there taken out of the store, a `file.deleted` change for every member.
 */
export async function commitDelete(
  services: Services,
  principal: Principal,
  workspaceId: string,
  path: string,
): Promise<FileReceipt> {
  const receipt = await services.workspaces.command(workspaceId, async (workspace, tx) => {
    assertMayChange(workspace, principal, 'write to');
    const current = await findFile(tx, workspace.workspaceId, path);
    if (!current) throw notFound('file');
    const version = (await lastVersion(tx, workspace.workspaceId, path)) + 1;
    const used = await moveStorageUse(
      tx,
      services,
      new Map([[current.savedBy, -current.size]]),
      principal.agentId,
    );
    const { signed } = await recordVersion(tx, services, workspace, principal, {
      path,
      version,
      action: 'delete',
      sha256: current.sha256,
      size: current.size,
      bytesKept: false,
    });
    if (!/\.md$/i.test(path)) await forgetOlderBytes(tx, workspace.workspaceId, path, version);
    await removeFile(tx, workspace.workspaceId, path);
    await retireIndexedVersions(tx, workspace.workspaceId, path);
    await listingDeleted(tx, workspace.workspaceId, path);
    return outcome(services, workspace, principal, 'file.deleted', signed, used);
  });
  if (!receipt) throw notFound('workspace');
  return receipt;
}
