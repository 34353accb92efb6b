import { ServiceError } from '../../protocol/errors.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
} from '../../storage/kernel/idempotency.ts';
import { UnitOfWork, withinUnit } from './commit.ts';
import type { Services } from './services.ts';

/** Someone else's request under the same key committed first; replay theirs. */
class ClaimedElsewhere extends Error {}

export interface KeyedRequest {
  /** Hash of the caller's scope and the key; the key itself is never stored. */
  keyHash: string;
  /** Hash of what the request asked, to refuse the same key for another request. */
  requestHash: string;
}

/**
 * Runs a write at most once per key (protocol/documents/protocol.md, "Idempotency"). The
 * claim, every command of the request and the stored answer commit in ONE transaction, so a
 * crash between them leaves either all or nothing: never a claimed key with no answer, nor an
 * answer with no write.
 * `execute` returns the answer and whether to keep it for replays (a failure on the service's
 * side is not kept: its writes and the claim roll back, and a retry runs again); a refusal it
 * throws rolls everything back, the claim too. `seal` and `unseal` turn an answer into what is stored and back.
 */
export async function onceByKey<T>(
  services: Services,
  request: KeyedRequest,
  execute: () => Promise<{ answer: T; keep: boolean }>,
  seal: (answer: T) => string,
  unseal: (stored: string) => T,
): Promise<T> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const earlier = await findIdempotencyKey(services.driver, request.keyHash);
    if (earlier) return replay(earlier, request, unseal);
    const unit = new UnitOfWork(services.driver, async (tx) => {
      if (!(await claimIdempotencyKey(tx, request.keyHash, request.requestHash))) {
        throw new ClaimedElsewhere();
      }
    });
    let outcome: { answer: T; keep: boolean };
    try {
      outcome = await withinUnit(unit, async () => {
        const done = await execute();
        if (done.keep) {
          await unit.step((tx) => completeIdempotencyKey(tx, request.keyHash, seal(done.answer)));
        }
        return done;
      });
    } catch (error) {
      await unit.end(false).catch(() => undefined);
      if (error instanceof ClaimedElsewhere) continue;
      throw error;
    }
    if (!outcome.keep) {
      // A failure on the service's side keeps nothing, the claim included: a retry with the
      // same key runs again (committing the claim alone would make it answer
      // idempotency_key_in_use for the key's whole lifetime).
      await unit.end(false).catch(() => undefined);
      return outcome.answer;
    }
    try {
      await unit.end(true);
    } catch (error) {
      if (error instanceof ClaimedElsewhere) continue;
      throw error;
    }
    return outcome.answer;
  }
  throw new ServiceError(
    'idempotency_key_in_use',
    'Another request with that Idempotency-Key is running. Retry in a moment with the same key.',
  );
}

function replay<T>(
  earlier: { requestHash: string; response: string },
  request: KeyedRequest,
  unseal: (stored: string) => T,
): T {
  if (earlier.requestHash !== request.requestHash) {
    throw new ServiceError(
      'idempotency_key_reused',
      'That Idempotency-Key was used with another request. Use a new key for a new request.',
    );
  }
  return unseal(earlier.response);
}
