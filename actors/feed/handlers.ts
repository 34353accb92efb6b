import { ServiceError } from '../../protocol/errors.ts';
import { cursorSeq } from './cursor.ts';
import { readFeedPage } from './feed.ts';
import { DEFAULT_PAGE_LIMIT } from '../kernel/page.ts';
import type { Services } from '../kernel/services.ts';
import type { Handler } from '../kernel/handler.ts';

const DEFAULT_WAIT_SECONDS = 30;

/** Where to read from: the given cursor, or (undefined) the agent's remembered place. */
async function startSeq(
  services: Services,
  agentId: string,
  after: string | undefined,
): Promise<number | undefined> {
  if (after === undefined) return undefined;
  return cursorSeq(services, agentId, after).catch((error: ServiceError) => {
    throw new ServiceError(error.code, error.message, { field: 'after' });
  });
}

export const changes: Handler<'changes'> = async ({ services, principal }, input) => {
  const from = await startSeq(services, principal.agentId, input.after);
  return readFeedPage(services, principal.agentId, from, input.limit ?? DEFAULT_PAGE_LIMIT);
};

export const waitForChanges: Handler<'wait_for_changes'> = async (
  { services, principal, signal },
  input,
) => {
  const { agentId } = principal;
  const from = await startSeq(services, agentId, input.after);
  const limit = input.limit ?? DEFAULT_PAGE_LIMIT;
  const timeoutMs = (input.timeout ?? DEFAULT_WAIT_SECONDS) * 1000;
  // Listen before reading, so a change committed between the read and the wait still wakes us.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const woken = services.hub.waitForChange(agentId, timeoutMs, stop.signal);
  try {
    const first = await readFeedPage(services, agentId, from, limit);
    if (first.changes.length > 0 || timeoutMs === 0) return first;
    await woken;
    if (signal.aborted) return first;
    // Read on from where the first page ended: the place moved there already.
    return await readFeedPage(services, agentId, from, limit);
  } finally {
    stop.abort();
    signal.removeEventListener('abort', onAbort);
  }
};
