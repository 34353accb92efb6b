import { ServiceError } from '../../protocol/errors.ts';
import { cursorSeq } from './cursor.ts';
import { readCallerPage, type FeedPage } from './feed.ts';
import { FeedWaiter } from './waiter.ts';
import { decodeCursor } from '../../protocol/events.ts';
import { DEFAULT_PAGE_LIMIT } from '../kernel/page.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import type { Handler } from '../kernel/handler.ts';

const DEFAULT_WAIT_SECONDS = 30;

/** Where to read from: the given cursor, or (undefined) the caller's own place. */
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
  return readCallerPage(services, principal, from, input.limit ?? DEFAULT_PAGE_LIMIT);
};

export const waitForChanges: Handler<'wait_for_changes'> = async (
  { services, principal, signal },
  input,
) => {
  const from = await startSeq(services, principal.agentId, input.after);
  const limit = input.limit ?? DEFAULT_PAGE_LIMIT;
  const timeoutMs = (input.timeout ?? DEFAULT_WAIT_SECONDS) * 1000;
  if (principal.token?.workspaceId) {
    return waitInWorkspace(services, principal, from, limit, timeoutMs, signal);
  }
  const { agentId } = principal;
  // Listen before reading, so a change committed between the read and the wait still wakes us.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  // A process that begins to stop answers its parked long-polls at once: the caller asks again.
  services.stopping.addEventListener('abort', onAbort, { once: true });
  const woken = services.hub.waitForChange(agentId, timeoutMs, stop.signal);
  try {
    const first = await readCallerPage(services, principal, from, limit);
    if (first.changes.length > 0 || timeoutMs === 0 || services.stopping.aborted) return first;
    await woken;
    if (signal.aborted || services.stopping.aborted) return first;
    // Read on from where the first page ended: the place moved there already.
    return await readCallerPage(services, principal, from, limit);
  } finally {
    stop.abort();
    signal.removeEventListener('abort', onAbort);
    services.stopping.removeEventListener('abort', onAbort);
  }
};

/**
 * The long-poll of a token restricted to one workspace: the agent's other workspaces' changes
 * neither end the wait with an empty page nor make it spin. Each read goes on from where the
 * one before reached, until a change of the workspace comes, the caller goes, or time is up.
 */
async function waitInWorkspace(
  services: Services,
  principal: Principal,
  from: number | undefined,
  limit: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<FeedPage> {
  const deadline = services.clock.now() + timeoutMs;
  const waiter = new FeedWaiter(services, principal.agentId, principal.token?.workspaceId ?? null);
  // The caller going, or this process beginning to stop, ends the wait.
  const ended = AbortSignal.any([signal, services.stopping]);
  try {
    waiter.reading();
    let page = await readCallerPage(services, principal, from, limit);
    while (page.changes.length === 0 && !ended.aborted) {
      const left = deadline - services.clock.now();
      if (left <= 0) break;
      await waiter.next(left, ended);
      if (ended.aborted) break;
      waiter.reading();
      page = await readCallerPage(services, principal, decodeCursor(page.cursor) ?? from, limit);
    }
    return page;
  } finally {
    waiter.stop();
  }
}
