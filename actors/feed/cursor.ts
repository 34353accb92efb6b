import { ServiceError } from '../../protocol/errors.ts';
import { decodeCursor } from '../../protocol/events.ts';
import { readFeedHead } from '../../storage/kernel/changes.ts';
import type { Services } from '../kernel/services.ts';

/**
 * The sequence number inside a cursor the agent sent back, refused when it was not issued to
 * that agent. A cursor past the head this process knows may come from another process on the
 * same database, so the head is read again before refusing.
 */
export async function cursorSeq(
  services: Services,
  agentId: string,
  cursor: unknown,
): Promise<number> {
  const seq = typeof cursor === 'string' ? decodeCursor(cursor) : null;
  if (seq !== null && seq <= (services.hub.head(agentId) ?? 0)) return seq;
  if (seq !== null) {
    const head = await readFeedHead(services.db(), agentId);
    if (head) services.hub.seedHead(agentId, head.lastSeq);
    if (head && seq <= head.lastSeq) return seq;
  }
  throw new ServiceError(
    'invalid_cursor',
    'That cursor was not issued to you. Use the `cursor` of an earlier answer or event, or leave it out to read from your remembered place.',
    { field: 'cursor' },
  );
}
