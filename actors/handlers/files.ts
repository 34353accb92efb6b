import { randomUUID } from 'node:crypto';
import { MAX_FILE_BYTES } from '../../protocol/files.ts';
import { parseFilePath } from '../../protocol/file-path.ts';
import type { ByteReply } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import {
  BlobStoreFullError,
  BlobStoreUnavailableError,
  BlobTooLargeError,
} from '../../storage/blobs/errors.ts';
import type { Transaction } from '../../storage/driver.ts';
import {
  addStorageUse,
  findFile,
  findKeptVersion,
  forgetOlderBytes,
  insertFileVersion,
  lastVersion,
  listFiles as readFiles,
  listReceipts as readReceipts,
  readLastReceipt,
  readStorageUse,
  removeFile,
  upsertFile,
  writeLastReceipt,
} from '../../storage/files.ts';
import { contentTypeOf } from '../content-type.ts';
import { decodePageCursor, encodePageCursor } from '../page-cursor.ts';
import { notFound, type Principal } from '../principal.ts';
import { issueReceipt, type FileReceipt, type SignedReceipt } from '../receipts.ts';
import type { Services } from '../services.ts';
import type { WorkspaceActor } from '../workspace-actor.ts';
import type { Handler } from './types.ts';
import { assertMayChange, readable } from './workspaces.ts';

const DEFAULT_LIMIT = 50;

/** Markdown files with a YAML header keep every version's bytes: deals pin exact versions. */
function keepsEveryVersion(path: string, head: Buffer): boolean {
  return /\.md$/i.test(path) && /^---\r?\n/.test(head.toString('latin1'));
}

/** Blob-store failures as the caller sees them. */
function blobFailure(error: unknown): unknown {
  if (error instanceof BlobTooLargeError) {
    return new ServiceError(
      'payload_too_large',
      `A file may be at most ${MAX_FILE_BYTES} bytes (100 MB) per PUT.`,
      { limit_bytes: MAX_FILE_BYTES },
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
async function moveStorageUse(
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

function quotaExceeded(services: Services): ServiceError {
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
function outcome(
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

export const writeFile: Handler<'write_file'> = async (call, input) => {
  const { services, principal, signal } = call;
  const path = parseFilePath(input.path);
  const visible = await readable(services, principal, input.workspace_id);
  assertMayChange(visible, principal, 'write to');
  // A declared length past the quota is refused before a byte is read (the commit checks again).
  if (call.body.declaredLength !== null) {
    const db = services.db();
    const replaced = await findFile(db, visible.workspaceId, path);
    const credit = replaced?.savedBy === principal.agentId ? replaced.size : 0;
    const used = await readStorageUse(db, principal.agentId);
    if (used - credit + call.body.declaredLength > services.storageQuotaBytes) {
      throw quotaExceeded(services);
    }
  }
  // The bytes go to the blob store first, with no database connection held meanwhile.
  let head = Buffer.alloc(0);
  const body = call.body;
  const source = (async function* () {
    for await (const chunk of body) {
      if (head.length < 5) head = Buffer.concat([head, Buffer.from(chunk.subarray(0, 5))]);
      yield chunk;
    }
  })();
  const stored = await services.files.blobs
    .put(source, { maxBytes: MAX_FILE_BYTES, signal })
    .catch((error: unknown) => {
      throw blobFailure(error);
    });
  const keepAll = keepsEveryVersion(path, head);
  const receipt = await services.workspaces.command(visible.workspaceId, async (workspace, tx) => {
    assertMayChange(workspace, principal, 'write to');
    const current = await findFile(tx, workspace.workspaceId, path);
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
    if (!keepAll) await forgetOlderBytes(tx, workspace.workspaceId, path, version);
    await upsertFile(tx, {
      workspaceId: workspace.workspaceId,
      path,
      version,
      sha256: stored.sha256,
      size: stored.size,
      contentType: contentTypeOf(path),
      savedAt,
      savedBy: principal.agentId,
    });
    return outcome(services, workspace, principal, 'file.saved', signed, used);
  });
  if (!receipt) throw notFound('workspace');
  return { receipt };
};

export const readFile: Handler<'read_file'> = async ({ services, principal }, input) => {
  const path = parseFilePath(input.path);
  const workspace = await readable(services, principal, input.workspace_id);
  const db = services.db();
  const current = await findFile(db, workspace.workspaceId, path);
  const wanted =
    input.version === undefined || input.version === current?.version
      ? current && { sha256: current.sha256, size: current.size }
      : await findKeptVersion(db, workspace.workspaceId, path, input.version);
  if (!wanted) throw notFound(input.version === undefined ? 'file' : 'file version');
  const blobs = services.files.blobs;
  const bytes: ByteReply = {
    contentType: contentTypeOf(path),
    size: wanted.size,
    etag: wanted.sha256,
    // The door stops iterating when the client goes: the blob's handle is closed then too.
    open: (range) =>
      (async function* () {
        const content = await blobs.open(wanted.sha256, range);
        try {
          yield* content;
        } finally {
          await content.close();
        }
      })(),
  };
  return bytes;
};

export const deleteFile: Handler<'delete_file'> = async ({ services, principal }, input) => {
  const path = parseFilePath(input.path);
  const visible = await readable(services, principal, input.workspace_id);
  assertMayChange(visible, principal, 'write to');
  const receipt = await services.workspaces.command(visible.workspaceId, async (workspace, tx) => {
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
    // A delete's receipt carries the size and fingerprint of the version that goes.
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
    return outcome(services, workspace, principal, 'file.deleted', signed, used);
  });
  if (!receipt) throw notFound('workspace');
  return { receipt };
};

export const listFiles: Handler<'list_files'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  const limit = input.limit ?? DEFAULT_LIMIT;
  const after =
    input.cursor === undefined
      ? null
      : (decodePageCursor(input.cursor, 'f', ['text'])[0] as string);
  const rows = await readFiles(
    services.db(),
    workspace.workspaceId,
    input.prefix ?? '',
    after,
    limit + 1,
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    files: page.map((row) => ({
      path: row.path,
      size: row.size,
      sha256: row.sha256,
      version: row.version,
      saved_at: row.savedAt.toISOString(),
      saved_by: { agent_id: row.savedBy, name: row.savedByName },
    })),
    next_cursor: rows.length > limit && last ? encodePageCursor('f', [last.path]) : null,
  };
};

export const listReceipts: Handler<'list_receipts'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  const limit = input.limit ?? DEFAULT_LIMIT;
  const after =
    input.cursor === undefined
      ? null
      : (([at, path, version]) => ({
          savedAt: new Date(at as string),
          path: path as string,
          version: Number(version),
        }))(decodePageCursor(input.cursor, 'r', ['time', 'text', 'int']));
  const rows = await readReceipts(
    services.db(),
    workspace.workspaceId,
    input.path ?? null,
    after,
    limit + 1,
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    receipts: page.map((row) => row.receipt as FileReceipt),
    next_cursor:
      rows.length > limit && last
        ? encodePageCursor('r', [last.savedAt.toISOString(), last.path, String(last.version)])
        : null,
  };
};
