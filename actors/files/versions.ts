import { randomUUID } from 'node:crypto';
import { MAX_FILE_BYTES } from '../../protocol/files/files.ts';
import type { ByteBody } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { StoredBlob } from '../../storage/blobs/blob-store.ts';
import {
  BlobStoreFullError,
  BlobStoreUnavailableError,
  BlobTooLargeError,
} from '../../storage/blobs/errors.ts';
import type { Transaction } from '../../storage/driver.ts';
import {
  findFile,
  forgetAllVersions,
  removeFile,
  insertFileVersion,
  keptProperties,
  type ContentSettings,
  replaceCurrentMetadata,
  lastVersion,
  beginSave,
  type LetGoVersion,
} from '../../storage/files/files.ts';
import { discardUnusedBlobs, holdBlob } from './blob-collector.ts';
import { currentUnit } from '../kernel/commit.ts';
import { storageProblem } from '../kernel/storage-problems.ts';
import { contentMd5Mismatch, md5Matches } from './content-md5.ts';
import { servedContentType } from './content-settings.ts';
import { parseFilePath } from '../../protocol/files/path.ts';
import { runDeleteHooks, runSaveHooks, SaveWatches, type SeenBytes } from './save-hooks.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import { appendReceipt } from '../receipts/chain.ts';
import type { FileReceipt } from '../receipts/receipts.ts';
import type { Services } from '../kernel/services.ts';
import type { WorkspaceActor } from '../workspaces/actor.ts';
import { assertMayChange } from '../workspaces/access.ts';
import { UploadReservation } from './upload-reservations.ts';
import { addUse, giveBack, moveStorageUse, useNotices, type UseDeltas } from './storage-use.ts';

/**
 * Versions of files: how bytes become a saved version with its receipt, and what a save or a
 * delete records. Every door that saves (PUT, MCP, storage links and their blocks) comes here.
 */

/** Bytes already in the blob store, about to become a version of a path. */
export interface StoredFile extends StoredBlob {
  /**
   * What the save hooks' watches made of the bytes (./save-hooks.ts): the index's entry, the
   * tokens they leak. A version the index read keeps its bytes while its file lives; any other
   * only while it is current (`every_kept_byte`: storage/files/files.ts `beginSave`).
   */
  seen: SeenBytes;
  /** Base64 of the MD5 of the bytes (./content-md5.ts). */
  contentMd5: string;
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
  // A full store is `storage_full`, as a full database is: one table for both.
  if (error instanceof BlobStoreFullError || error instanceof BlobStoreUnavailableError) {
    return storageProblem(error);
  }
  return error;
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
 * appended to the workspace's chain (actors/receipts/chain.ts), and the version row.
 */
async function recordVersion(
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
    contentMd5?: string;
    metadata?: Record<string, string>;
    contentSettings?: ContentSettings;
  },
  /** A save's current row in `files`, written with the version (insertFileVersion). */
  current?: { contentType: string; indexError: string | null; pathAsSaved: string },
): Promise<{ signed: FileReceipt; savedAt: Date }> {
  const savedAt = new Date(services.clock.now());
  const signed: FileReceipt = await appendReceipt(
    tx,
    services.files.signingKeys,
    workspace.workspaceId,
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
  );
  await insertFileVersion(
    tx,
    {
      workspaceId: workspace.workspaceId,
      ...version,
      agentId: principal.agentId,
      savedAt,
      receipt: signed,
    },
    current,
  );
  return { signed, savedAt };
}

/** What a file command answers: the receipt and the blobs it let go, one change per member. */
function outcome(
  workspace: WorkspaceActor,
  principal: Principal,
  type: 'file.saved' | 'file.deleted',
  signed: FileReceipt,
  letGo: readonly LetGoVersion[],
) {
  return {
    // No next state: the members are as they were, and the receipt chain orders itself by the
    // workspace's row lock (actors/receipts/chain.ts), so the row's version stays put.
    result: { receipt: signed, letGo: letGo.map((version) => version.sha256) },
    changes: fileChange(workspace, principal, type, signed),
  };
}

/**
 * Deletes the bytes a committed command let go, if no row uses them any more, once the command
 * has committed (in a request's unit of work, once the unit commits: its rollback would bring
 * the rows back). Never on the answer's path: deleting a large file takes the disk tens of
 * milliseconds (an S3 store, a round trip), and the answer does not depend on it
 * (./blob-discards.ts). Bytes left behind by a process that stops meanwhile are the collector's
 * to take later.
 */
export function discardLetGo(services: Services, sha256s: readonly string[]): void {
  if (sha256s.length === 0) return;
  const discard = () => services.files.discards.start(() => discardUnusedBlobs(services, sha256s));
  const unit = currentUnit();
  if (unit?.isOpen) unit.onCommit(discard);
  else discard();
}

/** Bytes in the blob store on their way to becoming a version, with the room they hold. */
export interface UploadedFile extends StoredFile {
  reservation: UploadReservation;
}

/**
 * Streams a file's bytes into the blob store, hashing them, with no database connection held
 * meanwhile. Room in the caller's quota is reserved before a byte is read (the declared length;
 * a body without one reserves as it arrives and is refused at the chunk that passes the room),
 * so uploads at once never take more than the quota between them; replacing its own file that
 * is let go gives that file's bytes back. The commit checks again, exactly. Hand the answer to
 * `commitSave`, which ends the reservation (on a refusal, the bytes are deleted at once): only
 * `saveFile` does, so every door saves one way. Each MD5 the request states (`statedMd5s`: the `Content-MD5` header, Azure's
 * `x-ms-blob-content-md5`) must be the MD5 of the bytes, or `content_md5_mismatch` and nothing
 * is kept.
 */
async function storeFileBytes(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  path: string,
  body: ByteBody,
  options: StoreOptions,
): Promise<UploadedFile> {
  const reservation = new UploadReservation(services, principal.agentId, {
    cap: options.maxBytes,
    givesBackFor: { workspaceId: workspace.workspaceId, path },
  });
  try {
    const declared = body.declaredLength;
    // A declared length past the size cap is the body's own 413, at its first read.
    if (declared !== null && declared <= options.maxBytes) await reservation.cover(declared);
    const watches = new SaveWatches({
      services,
      workspaceId: workspace.workspaceId,
      path,
      principal,
    });
    let seen = 0;
    const source = (async function* () {
      for await (const chunk of body) {
        seen += chunk.length;
        if (seen <= options.maxBytes) await reservation.grow(seen);
        await watches.see(chunk);
        yield chunk;
      }
    })();
    const stored = await services.files.blobs
      .put(source, {
        maxBytes: options.maxBytes,
        onHashed: reservation.hashed,
        ...(options.signal && { signal: options.signal }),
      })
      .catch((error: unknown) => {
        throw blobFailure(error, options.maxBytes);
      });
    // The blob store hashed MD5 beside SHA-256, off the main thread (storage/blobs/hashed-writer.ts).
    const contentMd5 = stored.md5;
    const wrong = options.statedMd5s?.find((stated) => !md5Matches(stated, contentMd5));
    if (wrong !== undefined) throw contentMd5Mismatch(wrong, contentMd5);
    return { ...stored, seen: await watches.finish(stored), contentMd5, reservation };
  } catch (error) {
    await reservation.settle(false);
    throw error;
  }
}

/**
 * A save of a file's bytes, the one every door and capability makes (write_file, a storage
 * link's Put Blob, post_listing): the bytes stored against the size cap and the saver's quota,
 * then the version committed with its receipt in one transaction. Answers the receipt and what
 * was stored (its MD5, for the doors that answer it).
 */
export async function saveFile(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  path: string,
  body: ByteBody,
  options: StoreOptions & SaveOptions,
): Promise<{ receipt: FileReceipt; stored: UploadedFile }> {
  const { maxBytes, signal, statedMd5s, ...save } = options;
  const stored = await storeFileBytes(services, principal, workspace, path, body, {
    maxBytes,
    ...(signal && { signal }),
    ...(statedMd5s && { statedMd5s }),
  });
  const receipt = await commitSave(services, principal, workspace.workspaceId, path, stored, save);
  return { receipt, stored };
}

/** How the bytes of a save are taken: the size cap, the client's signal, the MD5s it stated. */
export interface StoreOptions {
  maxBytes: number;
  signal?: AbortSignal;
  statedMd5s?: readonly string[];
}

export interface SaveOptions {
  /**
   * Checked first, against the file as it is in the transaction (null: none): throws to save
   * nothing (the conditional headers: `If-None-Match: *`, `If-Match`, and the dates of
   * protocol/conditional-dates.ts, judged by the current version's `savedAt`).
   */
  precondition?: (current: { sha256: string; savedAt: Date } | null) => void;
  /**
   * Runs before the quota is checked, in the same transaction (a block commit drops its staged
   * blocks there, so their bytes are not counted beside the file they become); answers the
   * blobs it let go.
   */
  alsoInTx?: (tx: Transaction) => Promise<readonly string[]>;
  /** The save makes a new listing of the path (post_listing); saves of a listing are checked. */
  listing?: { listingId: string };
  /** Blob metadata kept with the version (./blob-metadata.ts). */
  metadata?: Record<string, string>;
  /** Content settings kept with the version (./content-settings.ts). */
  contentSettings?: ContentSettings;
  /**
   * The path as the client spelt it (protocol/files/path.ts parseFileName), which listings show
   * from now on; `path` is its NFC key. Default: the key.
   */
  pathAsSent?: string;
}

/**
 * Records bytes already stored as the next version of `path`, in one workspace command: the
 * storage use moved (and the quota held), the signed receipt, the version row, the file row,
 * a `file.saved` change for every member, and what the save hooks of other capabilities do
 * (actors/files/save-hooks.ts: the index, the store, the leaked-token revocation). Older
 * versions the index did not read let go of their bytes (rule `every_kept_byte`), which leave
 * the blob store at once. Ends the upload's reservation: a refused save's bytes are deleted at
 * once.
 */
export async function commitSave(
  services: Services,
  principal: Principal,
  workspaceId: string,
  path: string,
  stored: UploadedFile,
  options: SaveOptions = {},
): Promise<FileReceipt> {
  const pathAsSaved = options.pathAsSent ?? path;
  if (parseFilePath(pathAsSaved) !== path) {
    throw new Error(`The spelling ${JSON.stringify(pathAsSaved)} does not name ${path}.`);
  }
  let answer: { receipt: FileReceipt; letGo: string[] } | null = null;
  try {
    answer = await services.workspaces.command(workspaceId, async (workspace, tx) => {
      assertMayChange(workspace, principal, 'write to');
      const { current, lastVersion, letGo } = await beginSave(
        tx,
        workspace.workspaceId,
        path,
        services.versionIsIndexedSql,
      );
      options.precondition?.(current);
      const alsoLetGo = (await options.alsoInTx?.(tx)) ?? [];
      const version = lastVersion + 1;
      const deltas: UseDeltas = new Map();
      // The metadata and content settings kept beside the bytes count with them, as kept bytes
      // (rule `every_kept_byte`): up to 8 KiB of metadata a version, on a 10-byte file too.
      const metadataBytes = keptProperties(options).bytes;
      addUse(deltas, principal.agentId, stored.size + metadataBytes, stored.size);
      if (current) addUse(deltas, current.savedBy, 0, -current.size);
      giveBack(deltas, letGo);
      const { blobNamed } = await moveStorageUse(
        tx,
        services,
        deltas,
        principal.agentId,
        stored.reservation,
      );
      // The bytes were stored before this transaction. While the upload's reservation named
      // them nothing could delete them; a reservation that lapsed meanwhile (an hour) did not
      // keep them: then make sure the collector has not taken them.
      if (!blobNamed) await holdBlob(tx, services.files.blobs, stored.sha256);
      const { signed, savedAt } = await recordVersion(
        tx,
        services,
        workspace,
        principal,
        {
          path,
          version,
          action: 'save',
          sha256: stored.sha256,
          size: stored.size,
          bytesKept: true,
          contentMd5: stored.contentMd5,
          ...(options.metadata && { metadata: options.metadata }),
          ...(options.contentSettings && { contentSettings: options.contentSettings }),
        },
        {
          contentType: servedContentType(path, options.contentSettings ?? {}),
          indexError: stored.seen.indexError,
          pathAsSaved,
        },
      );
      const hooks = await runSaveHooks(tx, services, {
        workspaceId: workspace.workspaceId,
        visibility: workspace.record.visibility,
        path,
        version,
        sha256: stored.sha256,
        savedAt,
        principal,
        seen: stored.seen,
        listing: options.listing,
      });
      const done = outcome(workspace, principal, 'file.saved', signed, letGo);
      return {
        ...done,
        result: { ...done.result, letGo: [...done.result.letGo, ...alsoLetGo] },
        changes: [...done.changes, ...hooks.changes],
        notices: useNotices(deltas, principal.agentId),
        afterCommit: hooks.afterCommit,
      };
    });
  } finally {
    await stored.reservation.settle(answer !== null);
  }
  if (!answer) throw notFound('workspace');
  discardLetGo(services, answer.letGo);
  return answer.receipt;
}

/**
 * Replaces the metadata of the current version of `path` (Azure's Set Blob Metadata), in one
 * workspace command: the bytes stay, so there is no new version, receipt or `file.saved`
 * (metadata is not part of a receipt). The metadata counts against the version's author, as its
 * bytes do: more of it past that author's quota is refused (`quota_exceeded`). Answers the
 * current version as it now is.
 */
export async function replaceMetadata(
  services: Services,
  principal: Principal,
  workspaceId: string,
  path: string,
  metadata: Record<string, string>,
  precondition?: SaveOptions['precondition'],
): Promise<{ sha256: string; savedAt: Date; version: number }> {
  const answer = await services.workspaces.command(workspaceId, async (workspace, tx) => {
    assertMayChange(workspace, principal, 'write to');
    const current = await findFile(tx, workspace.workspaceId, path);
    precondition?.(current);
    const replaced = current
      ? await replaceCurrentMetadata(tx, workspace.workspaceId, path, metadata)
      : null;
    if (!current || !replaced) throw notFound('file');
    const deltas: UseDeltas = new Map();
    addUse(deltas, replaced.agentId, replaced.addedBytes, 0);
    await moveStorageUse(tx, services, deltas, replaced.agentId);
    return {
      result: { sha256: current.sha256, savedAt: current.savedAt, version: current.version },
      notices: useNotices(deltas, replaced.agentId),
    };
  });
  if (!answer) throw notFound('workspace');
  return answer;
}

/**
 * Deletes the current version of `path` in one workspace command: every version of the path
 * lets go of its bytes (their quota given back to whoever saved them; the bytes leave the blob
 * store at once), a signed receipt (carrying the size and fingerprint of the version that goes),
 * the delete hooks (the index forgets the path, a listing there leaves the store), a
 * `file.deleted` change for every member.
 */
export async function commitDelete(
  services: Services,
  principal: Principal,
  workspaceId: string,
  path: string,
  options: Pick<SaveOptions, 'precondition'> = {},
): Promise<FileReceipt> {
  const answer = await services.workspaces.command(workspaceId, async (workspace, tx) => {
    assertMayChange(workspace, principal, 'write to');
    const current = await findFile(tx, workspace.workspaceId, path);
    if (!current) throw notFound('file');
    options.precondition?.(current);
    const version = (await lastVersion(tx, workspace.workspaceId, path)) + 1;
    const letGo = await forgetAllVersions(tx, workspace.workspaceId, path);
    const deltas: UseDeltas = new Map();
    addUse(deltas, current.savedBy, 0, -current.size);
    giveBack(deltas, letGo);
    await moveStorageUse(tx, services, deltas, principal.agentId);
    const { signed } = await recordVersion(tx, services, workspace, principal, {
      path,
      version,
      action: 'delete',
      sha256: current.sha256,
      size: current.size,
      bytesKept: false,
    });
    await removeFile(tx, workspace.workspaceId, path);
    await runDeleteHooks(tx, services, workspace.workspaceId, path);
    return {
      ...outcome(workspace, principal, 'file.deleted', signed, letGo),
      notices: useNotices(deltas, principal.agentId),
    };
  });
  if (!answer) throw notFound('workspace');
  discardLetGo(services, answer.letGo);
  return answer.receipt;
}
