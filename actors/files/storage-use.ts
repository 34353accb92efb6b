import type { Transaction } from '../../storage/driver.ts';
import { addStorageUse, type LetGoVersion, type UseDelta } from '../../storage/files/files.ts';
import { readHeldBytes } from '../../storage/files/upload-reservations.ts';
import { countsNotice } from '../kernel/agent-counts.ts';
import type { Services } from '../kernel/services.ts';
import { quotaExceeded, storageQuotaBytes } from './quota.ts';
import type { UploadReservation } from './upload-reservations.ts';

/**
 * What a write does to storage use (rule `every_kept_byte`): the bytes it moves between agents
 * (kept, and the part that is current files), moved in one order, and the saver held to its
 * quota in the write's own transaction.
 */

/** A change of storage use per agent (kept bytes, and the part that is current files). */
export type UseDeltas = Map<string, UseDelta>;

export function addUse(deltas: UseDeltas, agentId: string, kept: number, current: number): void {
  const delta = deltas.get(agentId) ?? { kept: 0, current: 0 };
  deltas.set(agentId, { kept: delta.kept + kept, current: delta.current + current });
}

/**
 * The bytes let go by versions that no longer keep them, and the metadata that went with them,
 * given back to whoever saved them.
 */
export function giveBack(deltas: UseDeltas, letGo: readonly LetGoVersion[]): void {
  for (const version of letGo) {
    addUse(deltas, version.agentId, -(version.size + version.metadataBytes), 0);
  }
}

/**
 * The counts notices of a write that moved storage use (and released `saver`'s reservation):
 * whoever it moved bytes for may no longer be a member, so no feed change reaches them.
 */
export function useNotices(deltas: UseDeltas, saver: string) {
  return [...new Set([saver, ...deltas.keys()])].map(countsNotice);
}

/**
 * Moves bytes of use between agents, in agent-id order (two saves over each other's files
 * in two workspaces never lock the two rows in opposite orders), and refuses a save that takes
 * the saver past its quota: its kept bytes, its staged blocks and its other uploads in progress
 * (every one but `reservation`, which this save turns into kept bytes) together, exactly, in the
 * transaction that holds the saver's row.
 */
export async function moveStorageUse(
  tx: Transaction,
  services: Services,
  deltas: UseDeltas,
  saver: string,
  reservation?: UploadReservation,
): Promise<{ blobNamed: boolean }> {
  for (const agentId of [...deltas.keys()].sort()) {
    await addStorageUse(tx, agentId, deltas.get(agentId) ?? { kept: 0, current: 0 });
  }
  if ((deltas.get(saver)?.kept ?? 0) > 0) {
    const held = await readHeldBytes(tx, {
      agentId: saver,
      now: new Date(services.clock.now()),
      exceptReservation: reservation?.id,
    });
    if (held.kept + held.staged + held.reserved > storageQuotaBytes(services)) {
      throw quotaExceeded(services);
    }
  }
  return { blobNamed: (await reservation?.releaseIn(tx)) ?? false };
}
