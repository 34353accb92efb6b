import type { ByteBody } from '../../protocol/binding.ts';
import { MAX_BLOCK_BYTES, STAGED_BLOCK_LIFETIME_MS } from '../../protocol/files/storage-links.ts';
import { BlobNotFoundError } from '../../storage/blobs/errors.ts';
import {
  dropExpiredBlocks,
  dropStagedBlocks,
  findStagedBlocks,
  stageBlock as recordStagedBlock,
  type BlockOwner,
} from '../../storage/files/staged-blocks.ts';
import {
  dropExpiredReservations,
  lockStorageUse,
  readHeldBytes,
} from '../../storage/files/upload-reservations.ts';
import { holdBlob } from './blob-collector.ts';
import { md5Matches, Md5Watch } from './content-md5.ts';
import { SaveWatches } from './save-hooks.ts';
import {
  blobFailure,
  commitSave,
  discardLetGo,
  type SaveOptions,
  type UploadedFile,
} from './versions.ts';
import { countsNotice } from '../kernel/agent-counts.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import { quotaExceeded, storageQuotaBytes } from './quota.ts';
import type { FileReceipt } from '../receipts/receipts.ts';
import type { Services } from '../kernel/services.ts';
import { LinkRefused } from './storage-links.ts';
import { UploadReservation } from './upload-reservations.ts';
import type { WorkspaceActor } from '../workspaces/actor.ts';
import { assertMayChange } from '../workspaces/access.ts';

/**
 * Blocks: how Azure clients upload a large file in parts (Put Block, then Put Block List).
 * A staged block is bytes in the blob store and a row in `staged_blocks` under the workspace,
 * the path and the agent that staged it. It is never visible as a file; its bytes count
 * against the agent's quota while it is staged; it expires after STAGED_BLOCK_LIFETIME_MS.
 * Put Block List concatenates the named blocks into one blob and saves it as the next version
 * of the path, with its receipt, exactly as a PUT does; every block staged for that path is
 * then dropped (Azure discards the ones a commit leaves out).
 */

/** Azure block ids: base64 of at most 64 bytes, the same length within one blob. */
const BLOCK_ID = /^[A-Za-z0-9+/=_-]{1,88}$/;

export async function stageBlock(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  path: string,
  blockId: string,
  body: ByteBody,
  signal: AbortSignal,
  /** The request's Content-MD5: the block's bytes must have it, or nothing is staged. */
  contentMd5?: string,
): Promise<void> {
  if (!BLOCK_ID.test(blockId)) {
    throw new LinkRefused(
      400,
      'InvalidQueryParameterValue',
      'The blockid must be base64 of at most 64 bytes.',
    );
  }
  assertMayChange(workspace, principal, 'write to');
  const owner: BlockOwner = {
    workspaceId: workspace.workspaceId,
    path,
    agentId: principal.agentId,
  };
  // Room is reserved before a byte is streamed, as for any upload (./upload-reservations.ts).
  const reservation = new UploadReservation(services, principal.agentId, {
    cap: MAX_BLOCK_BYTES,
    replacesBlock: { ...owner, blockId },
  });
  let replaced: string[] | null = null;
  try {
    const declared = body.declaredLength;
    if (declared !== null && declared <= MAX_BLOCK_BYTES) await reservation.cover(declared);
    let seen = 0;
    const md5 = new Md5Watch();
    const source = (async function* () {
      for await (const chunk of body) {
        seen += chunk.length;
        if (seen <= MAX_BLOCK_BYTES) await reservation.grow(seen);
        md5.see(chunk);
        yield chunk;
      }
    })();
    const stored = await services.files.blobs
      .put(source, { maxBytes: MAX_BLOCK_BYTES, signal, onHashed: reservation.hashed })
      .catch((error: unknown) => {
        throw blobFailure(error, MAX_BLOCK_BYTES);
      });
    if (contentMd5 !== undefined && !md5Matches(contentMd5, md5.digest())) throw md5Mismatch();
    replaced = await services.workspaces.command(workspace.workspaceId, async (current, tx) => {
      assertMayChange(current, principal, 'write to');
      const at = new Date(services.clock.now());
      // The agent's usage row, locked: its stages, saves and reservations take turns here.
      await lockStorageUse(tx, principal.agentId);
      const held = await readHeldBytes(tx, {
        agentId: principal.agentId,
        now: at,
        exceptReservation: reservation.id,
        exceptBlock: { ...owner, blockId },
      });
      if (held.kept + held.staged + held.reserved + stored.size > storageQuotaBytes(services)) {
        throw quotaExceeded(services);
      }
      const before = await recordStagedBlock(tx, owner, {
        blockId,
        sha256: stored.sha256,
        size: stored.size,
        stagedAt: at,
        expiresAt: new Date(at.getTime() + STAGED_BLOCK_LIFETIME_MS),
      });
      // Named by the reservation until now, the bytes are there; else make sure (blob-collector.ts).
      if (!(await reservation.releaseIn(tx)))
        await holdBlob(tx, services.files.blobs, stored.sha256);
      // No next state: staging changes no member (the command holds the workspace's row
      // lock all the same), so the row's version stays put and copies elsewhere stay current.
      return {
        result: before === null ? [] : [before],
        // Staged bytes count in the agent's account figures; staging is in no one's feed.
        notices: [countsNotice(principal.agentId)],
      };
    });
  } finally {
    await reservation.settle(replaced !== null);
  }
  if (!replaced) throw notFound('workspace');
  // The block staged before under the same id, replaced: its bytes go now.
  discardLetGo(services, replaced);
}

/**
 * Saves the blocks named, in order, as the next version of the path. Every id must name a
 * block this agent staged for this path (Azure's `Latest` and `Uncommitted`; committed blocks
 * are not kept once their file is saved, so `Committed` finds only staged ones too).
 */
export async function commitBlocks(
  services: Services,
  principal: Principal,
  workspace: WorkspaceActor,
  path: string,
  blockIds: string[],
  signal: AbortSignal,
  options: Pick<SaveOptions, 'precondition' | 'metadata' | 'contentSettings' | 'pathAsSent'> & {
    /** `x-ms-blob-content-md5`: the whole file's MD5 as the client states it, checked. */
    contentMd5?: string;
  } = {},
): Promise<FileReceipt> {
  assertMayChange(workspace, principal, 'write to');
  const owner: BlockOwner = {
    workspaceId: workspace.workspaceId,
    path,
    agentId: principal.agentId,
  };
  const staged = await findStagedBlocks(services.db(), owner, new Date(services.clock.now()));
  const blocks = blockIds.map((blockId) => {
    const block = staged.get(blockId);
    if (!block) {
      throw new LinkRefused(
        400,
        'InvalidBlockList',
        `The specified block list is invalid: block ${blockId} was never staged for this file by this link's agent, or it expired.`,
      );
    }
    return block;
  });
  const total = blocks.reduce((sum, block) => sum + block.size, 0);
  if (total > storageQuotaBytes(services)) throw quotaExceeded(services);
  const blobs = services.files.blobs;
  const watches = new SaveWatches({
    services,
    workspaceId: workspace.workspaceId,
    path,
    principal,
  });
  const md5 = new Md5Watch();
  const joined = (async function* () {
    for (const block of blocks) {
      const content = await blobs.open(block.sha256).catch((error: unknown) => {
        if (error instanceof BlobNotFoundError) {
          throw new LinkRefused(400, 'InvalidBlockList', `Block ${block.blockId} expired.`);
        }
        throw error;
      });
      try {
        for await (const chunk of content) {
          md5.see(chunk);
          await watches.see(chunk);
          yield chunk;
        }
      } finally {
        await content.close();
      }
    }
  })();
  // The joined bytes are the blocks' own, counted while they are staged: this upload reserves
  // no room, it only names its blob before the blob is visible.
  const reservation = new UploadReservation(services, principal.agentId, { cap: 0 });
  let file: UploadedFile;
  try {
    const stored = await blobs
      .put(joined, { maxBytes: storageQuotaBytes(services), signal, onHashed: reservation.hashed })
      .catch((error: unknown) => {
        throw blobFailure(error, storageQuotaBytes(services));
      });
    const contentMd5 = md5.digest();
    // Azure keeps a block list's stated MD5 unchecked; checking it costs nothing here (the
    // blocks were hashed on the way) and keeps the served MD5 true.
    if (options.contentMd5 !== undefined && !md5Matches(options.contentMd5, contentMd5)) {
      throw md5Mismatch();
    }
    file = { ...stored, seen: await watches.finish(stored), contentMd5, reservation };
  } catch (error) {
    await reservation.settle(false);
    throw error;
  }
  return commitSave(services, principal, workspace.workspaceId, path, file, {
    ...(options.precondition && { precondition: options.precondition }),
    ...(options.metadata && { metadata: options.metadata }),
    ...(options.contentSettings && { contentSettings: options.contentSettings }),
    ...(options.pathAsSent !== undefined && { pathAsSent: options.pathAsSent }),
    // The blocks become the file: dropped before the quota is checked, their bytes go after.
    alsoInTx: (tx) => dropStagedBlocks(tx, owner),
  });
}

/**
 * Drops staged blocks past their time (the blocks.expire job), and upload reservations left by
 * a process that stopped; their blobs are collected. Answers how many blocks went.
 */
export async function expireStagedBlocks(services: Services, now: Date): Promise<number> {
  return services.driver.transaction(async (tx) => {
    await dropExpiredReservations(tx, now);
    return dropExpiredBlocks(tx, now);
  });
}

/** Azure's refusal of bytes whose stated MD5 is not theirs. */
export function md5Mismatch(): LinkRefused {
  return new LinkRefused(
    400,
    'Md5Mismatch',
    'The MD5 value specified in the request did not match with the MD5 value calculated by the server.',
  );
}
