import { MAX_FILE_BYTES, type DealReceipt } from '../../protocol/files/files.ts';
import { parseFileName, parseFilePath } from '../../protocol/files/path.ts';
import { writeDateCondition } from '../../protocol/conditional-dates.ts';
import { reply } from '../../protocol/binding.ts';
import { BlobNotFoundError } from '../../storage/blobs/errors.ts';
import { findKeptVersion, listFiles as readFiles } from '../../storage/files/files.ts';
import { listReceipts as readReceipts } from '../../storage/receipts/receipts.ts';
import { contentTypeOf } from './content-type.ts';
import type { FileBytes } from './version-properties.ts';
import { commitDelete, saveFile } from './versions.ts';
import { readCursorPage } from '../kernel/page.ts';
import { notFound } from '../kernel/principal.ts';
import type { FileReceipt } from '../receipts/receipts.ts';
import type { Handler } from '../kernel/handler.ts';
import { assertFileNotHidden, isOutsider } from './hidden-files.ts';
import { assertMayChange, readable } from '../workspaces/access.ts';

export const writeFile: Handler<'write_file'> = async (call, input) => {
  const { services, principal, signal } = call;
  const { path, asSent } = parseFileName(input.path);
  const workspace = await readable(services, principal, input.workspace_id);
  assertMayChange(workspace, principal, 'write to');
  const contentMd5 = call.headers['content-md5'];
  const precondition = writeDateCondition(call.headers);
  const { receipt } = await saveFile(services, principal, workspace, path, call.body, {
    maxBytes: MAX_FILE_BYTES,
    signal,
    pathAsSent: asSent,
    ...(contentMd5 !== undefined && { statedMd5s: [contentMd5] }),
    ...(precondition && { precondition }),
  });
  return { receipt };
};

export const readFile: Handler<'read_file'> = async ({ services, principal }, input) => {
  const path = parseFilePath(input.path);
  const workspace = await readable(services, principal, input.workspace_id);
  const resource = input.version === undefined ? 'file' : 'file version';
  await assertFileNotHidden(services, principal, workspace, path, resource);
  const db = services.db();
  // The current version (version left out) or a kept one: one row with its properties.
  const wanted = await findKeptVersion(db, workspace.workspaceId, path, input.version ?? null);
  if (!wanted) throw notFound(resource);
  const blobs = services.files.blobs;
  const bytes: FileBytes = {
    contentMd5: wanted.contentMd5,
    metadata: wanted.metadata,
    contentSettings: wanted.contentSettings,
    // The REST and MCP doors serve the path's type (HTML as text: ./content-type.ts); the
    // storage-link door answers the type a save named (server/storage-link/blob-properties.ts).
    contentType: contentTypeOf(path),
    size: wanted.size,
    etag: wanted.sha256,
    lastModified: wanted.savedAt,
    // The door stops iterating when the client goes: the blob's handle is closed then too.
    open: (range) =>
      (async function* () {
        const content = await blobs.open(wanted.sha256, range).catch((error: unknown) => {
          // Replaced a moment ago and its bytes collected since: that version is gone.
          if (error instanceof BlobNotFoundError) throw notFound('file version');
          throw error;
        });
        try {
          yield* content;
        } finally {
          await content.close();
        }
      })(),
  };
  return reply(200, bytes, wanted.contentMd5 === null ? {} : { 'content-md5': wanted.contentMd5 });
};

export const deleteFile: Handler<'delete_file'> = async (
  { services, principal, headers },
  input,
) => {
  const path = parseFilePath(input.path);
  const visible = await readable(services, principal, input.workspace_id);
  assertMayChange(visible, principal, 'write to');
  const precondition = writeDateCondition(headers);
  return {
    receipt: await commitDelete(services, principal, visible.workspaceId, path, {
      ...(precondition && { precondition }),
    }),
  };
};

export const listFiles: Handler<'list_files'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  // What is withheld from non-members (a listing the operator hid) is not listed to them either,
  // as read_file refuses it (./hidden-files.ts).
  const outsider = isOutsider(workspace, principal);
  const { rows, nextCursor } = await readCursorPage(
    input,
    { kind: 'f', shape: ['text'], after: ([path]) => path },
    (after, fetch) =>
      readFiles(
        services.db(),
        workspace.workspaceId,
        // Compared as paths are: by their NFC key.
        (input.prefix ?? '').normalize('NFC'),
        after ?? null,
        fetch,
        outsider,
        services.agentNameSql,
      ),
    (last) => [last.path],
  );
  return {
    files: rows.map((row) => ({
      // The spelling the file was saved under; the cursor keeps its key.
      path: row.pathAsSaved,
      size: row.size,
      sha256: row.sha256,
      version: row.version,
      saved_at: row.savedAt.toISOString(),
      saved_by: { agent_id: row.savedBy, name: row.savedByName },
      index_error: row.indexError,
    })),
    next_cursor: nextCursor,
  };
};

export const listReceipts: Handler<'list_receipts'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  // The receipts of what is withheld from non-members (./hidden-files.ts) are left
  // out for them: a receipt names the path, size and sha256 a read would refuse. Their chain
  // then has a gap there (the next receipt's prev_hash names the one left out).
  const outsider = isOutsider(workspace, principal);
  const { rows, nextCursor } = await readCursorPage(
    input,
    {
      kind: 'r',
      shape: ['time', 'uuid'],
      after: ([at, receiptId]) => ({ at: new Date(at), receiptId }),
    },
    (after, fetch) =>
      readReceipts(
        services.db(),
        services.receiptSources.all(),
        workspace.workspaceId,
        input.path ?? null,
        after ?? null,
        fetch,
        outsider ? { outsiderOf: workspace.record.visibility } : {},
      ),
    (last) => [last.at.toISOString(), last.receiptId],
  );
  return {
    receipts: rows.map((row) => row.receipt as FileReceipt | DealReceipt),
    next_cursor: nextCursor,
  };
};
