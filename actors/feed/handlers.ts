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
  // A parked wait lives no longer than its token: revoked, expired or suspended, it answers the
  // 401 a new call would get (as a socket is disconnected), never a change read after the end.
  const life = tokenLife(services, principal);
  try {
    const page = principal.token?.workspaceId
      ? await waitInWorkspace(services, principal, from, limit, timeoutMs, signal, life.ended)
      : await waitInFeed(services, principal, from, limit, timeoutMs, signal, life.ended);
    life.assertLive();
    return page;
  } finally {
    life.stop();
  }
};

/** The end of the caller's token while a wait is parked (none for a call without a token). */
function tokenLife(services: Services, principal: Principal) {
  const stop = new AbortController();
  let why: ServiceError | undefined;
  const grant = principal.token;
  const watch = grant
    ? services.tokens.watch(grant, (error) => {
        why = error;
        stop.abort();
      })
    : null;
  return {
    ended: stop.signal,
    assertLive(): void {
      if (why) throw why;
    },
    stop: () => watch?.stop(),
  };
}

/**
 * Before a read that a wake-up asked for: the change that woke the wait may be the one that
 * ended the token (a suspension's notice), whose re-check is still under way. A token forgotten
 * since it was resolved is looked up again; a 401 then ends the wait.
 */
async function assertTokenStill(services: Services, principal: Principal): Promise<void> {
  const grant = principal.token;
  if (grant && !services.tokens.isCurrent(grant)) await services.tokens.recheck(grant);
}

async function waitInFeed(
  services: Services,
  principal: Principal,
  from: number | undefined,
  limit: number,
  timeoutMs: number,
  signal: AbortSignal,
  tokenEnded: AbortSignal,
): Promise<FeedPage> {
  const { agentId } = principal;
  // The caller going, this process beginning to stop (it answers its parked long-polls at once:
  // the caller asks again) or the token's end stop the wait.
  const ended = AbortSignal.any([signal, services.stopping, tokenEnded]);
  // Ends the wait below however this returns: a page read at once leaves no waiter behind.
  const stop = new AbortController();
  const onEnded = () => stop.abort();
  ended.addEventListener('abort', onEnded, { once: true });
  // Listen before reading, so a change committed between the read and the wait still wakes us.
  const woken = services.hub.waitForChange(agentId, timeoutMs, stop.signal);
  try {
    const first = await readCallerPage(services, principal, from, limit);
    if (first.changes.length > 0 || timeoutMs === 0 || ended.aborted) return first;
    await woken;
    if (ended.aborted) return first;
    await assertTokenStill(services, principal);
    // Read on from where the first page ended: the place moved there already.
    return await readCallerPage(services, principal, from, limit);
  } finally {
    stop.abort();
    ended.removeEventListener('abort', onEnded);
  }
}

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
  tokenEnded: AbortSignal,
): Promise<FeedPage> {
  const deadline = services.clock.now() + timeoutMs;
  const waiter = new FeedWaiter(services, principal.agentId, principal.token?.workspaceId ?? null);
  // The caller going, this process beginning to stop, or the token's end ends the wait.
  const ended = AbortSignal.any([signal, services.stopping, tokenEnded]);
  try {
    waiter.reading();
    let page = await readCallerPage(services, principal, from, limit);
    while (page.changes.length === 0 && !ended.aborted) {
      const left = deadline - services.clock.now();
      if (left <= 0) break;
      await waiter.next(left, ended);
      if (ended.aborted) break;
      await assertTokenStill(services, principal);
      waiter.reading();
      page = await readCallerPage(services, principal, decodeCursor(page.cursor) ?? from, limit);
    }
    return page;
  } finally {
    waiter.stop();
  }
}
