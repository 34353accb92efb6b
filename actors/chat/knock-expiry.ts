import { knockCodec, knockStatus } from '../../machines/knock.ts';
import { dueKnocks, findKnock, settleKnock } from '../../storage/chat.ts';
import type { Services } from '../kernel/services.ts';

/** Due knocks are read and expired in batches of this many. */
const BATCH = 500;

/**
 * Expires every pending knock past its time; run by the scheduler, safe to run twice (and in
 * two processes at once): the row's `status = 'pending'` guard lets one settle each knock.
 */
export async function expireDueKnocks(services: Services, now: Date): Promise<number> {
  let expired = 0;
  for (;;) {
    const due = await dueKnocks(services.db(), now, BATCH);
    for (const knockId of due) {
      const done = await services.commit(async (tx) => {
        const row = await findKnock(tx, knockId);
        if (!row || row.status !== 'pending') return { result: false };
        const next = knockCodec.step(knockCodec.restore(row.machine), {
          type: 'expire',
          at: now.getTime(),
        });
        if (knockStatus(next) !== 'expired') return { result: false };
        const settled = await settleKnock(
          tx,
          knockId,
          'expired',
          now,
          null,
          knockCodec.persist(next),
        );
        return {
          result: settled,
          changes: settled
            ? [row.fromAgent, row.toAgent].map((agentId) => ({
                agentId,
                type: 'knock.expired',
                data: { knock_id: knockId, status: 'expired', workspace_id: row.workspaceId },
              }))
            : [],
        };
      });
      if (done) expired++;
    }
    if (due.length < BATCH) return expired;
  }
}
