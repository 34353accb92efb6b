/**
 * The storage quota's rule and its refusal. Rule `every_kept_byte` (/protocol "Files"): every
 * byte the service keeps for an agent counts against its quota (its current files, the older
 * versions it saved that are kept, what the index keeps of their YAML headers, its staged
 * blocks and its uploads in progress), or is not kept.
 */
import { ServiceError } from '../../protocol/errors.ts';
import type { Transaction } from '../../storage/driver.ts';
import { readHeldBytes } from '../../storage/files/upload-reservations.ts';
import type { Services } from '../kernel/services.ts';

/** The rule's name, as `whoami` shows it. */
export const QUOTA_RULE = 'every_kept_byte';

/** Bytes one agent may hold (STORAGE_QUOTA_BYTES), every kept byte counted: 1 GiB unless set. */
export function storageQuotaBytes(services: Services): number {
  return services.config.storageQuotaBytes ?? 1024 ** 3;
}

export function quotaExceeded(services: Services): ServiceError {
  return new ServiceError(
    'quota_exceeded',
    `This upload would take your storage past its ${storageQuotaBytes(services)} bytes (whoami shows what counts: current files, older versions kept, the index's copy of their YAML headers, staged blocks, uploads in progress). Delete files you no longer need (a delete gives back every version of the file), then retry.`,
    { quota_bytes: storageQuotaBytes(services) },
  );
}

/**
 * Refuses the command (`quota_exceeded`) when what `agentId` holds is past the quota: its kept
 * bytes, staged blocks and uploads in progress. Call it after adding to the agent's use, in the
 * transaction that holds its row.
 */
export async function assertWithinQuota(
  tx: Transaction,
  services: Services,
  agentId: string,
): Promise<void> {
  const held = await readHeldBytes(tx, { agentId, now: new Date(services.clock.now()) });
  if (held.kept + held.staged + held.reserved > storageQuotaBytes(services)) {
    throw quotaExceeded(services);
  }
}
