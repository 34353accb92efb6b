import { encodeCursor, type ChangeEvent } from '../../protocol/events.ts';
import {
  readChanges,
  readWorkspaceChanges,
  type StoredChangeRow,
} from '../../storage/kernel/changes.ts';
import type { Queryable } from '../../storage/driver.ts';
import { moveTokenReadSeq, tokenReadSeq } from '../../storage/kernel/tokens.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import type { TokenGrant } from '../kernel/token-scope.ts';

export interface FeedPage {
  changes: ChangeEvent[];
  cursor: string;
}

/**
 * Reads the caller's feed after `after` (a sequence number) or, without it, after its place,
 * and moves that place on to the end of the page. A restricted token (scopes `read`,
 * `workspace:<id>`) reads from and moves its own place, never the agent's remembered one, and
 * a workspace token sees only that workspace's changes.
 */
export function readCallerPage(
  services: Services,
  principal: Principal,
  after: number | undefined,
  limit: number,
): Promise<FeedPage> {
  const grant = principal.token;
  if (grant?.restricted) return readTokenPage(services, grant, after, limit);
  return readFeedPage(services, principal.agentId, after, limit);
}

/**
 * The agent's whole feed from its remembered place: one command, so the read and the move see
 * the same place, and a copy of the agent that another process has moved on is caught by its
 * version and reloaded rather than replaying what was already read.
 */
export async function readFeedPage(
  services: Services,
  agentId: string,
  after: number | undefined,
  limit: number,
): Promise<FeedPage> {
  const page = await services.agents.command(agentId, async (agent, tx) => {
    const from = after ?? agent.readSeq;
    const rows = await readChanges(tx, agentId, from, limit);
    const last = rows.at(-1)?.seq ?? from;
    return {
      result: { changes: rows.map((row) => row.event), cursor: encodeCursor(last) },
      next: agent.propose({ type: 'feed.read', seq: last }),
    };
  });
  if (!page) throw new Error(`agent ${agentId} vanished`);
  return page;
}

/**
 * A restricted token's own place, in one transaction: the token's row is locked first (a move
 * by 0 changes nothing but holds the row), so two reads with the same token do not both take
 * the same page as new.
 */
async function readTokenPage(
  services: Services,
  grant: TokenGrant,
  after: number | undefined,
  limit: number,
): Promise<FeedPage> {
  return services.commit(async (tx) => {
    const place = await moveTokenReadSeq(tx, grant.tokenId, 0);
    const from = after ?? place;
    const { rows, readTo } = await visibleChanges(tx, grant.agentId, grant, from, limit);
    await moveTokenReadSeq(tx, grant.tokenId, readTo);
    return { result: { changes: rows.map((row) => row.event), cursor: encodeCursor(readTo) } };
  });
}

/**
 * What a token sees of its agent's feed after `seq`: a workspace token only that workspace's
 * changes. `readTo` is how far the read reached (past changes passed over).
 */
function visibleChanges(
  db: Queryable,
  agentId: string,
  grant: TokenGrant | null,
  seq: number,
  limit: number,
): Promise<{ rows: StoredChangeRow[]; readTo: number }> {
  if (grant?.workspaceId) {
    return readWorkspaceChanges(db, agentId, grant.workspaceId, seq, limit);
  }
  return readChanges(db, agentId, seq, limit).then((rows) => ({
    rows,
    readTo: rows.at(-1)?.seq ?? seq,
  }));
}

/** The place a socket made with `grant` replays from when it sends no cursor. */
export async function placeOf(
  services: Services,
  grant: TokenGrant | null,
  agentReadSeq: number,
): Promise<number> {
  if (!grant?.restricted) return agentReadSeq;
  return tokenReadSeq(services.db(), grant.tokenId);
}

/**
 * Moves the caller's place forward to `seq` (never back): a restricted token's own, else the
 * agent's remembered place. Returns the place now kept.
 */
export async function markRead(
  services: Services,
  agentId: string,
  grant: TokenGrant | null,
  seq: number,
): Promise<number> {
  if (grant?.restricted) return moveTokenReadSeq(services.db(), grant.tokenId, seq);
  const place = await services.agents.command(agentId, async (agent) => {
    const next = agent.propose({ type: 'feed.read', seq });
    return { result: next ? next.context.readSeq : agent.readSeq, next };
  });
  if (place === null) throw new Error(`agent ${agentId} vanished`);
  return place;
}

/** The changes after `seq`, without moving anything: what the mail push sends. */
export function changesAfter(
  services: Services,
  agentId: string,
  seq: number,
  limit: number,
): Promise<StoredChangeRow[]> {
  return readChanges(services.db(), agentId, seq, limit);
}

type VisibleChanges = { rows: StoredChangeRow[]; readTo: number };

/** The replay reads out now, per service: what `visibleChangesAfter` shares. */
const replaysOut = new WeakMap<Services, Map<string, Promise<VisibleChanges>>>();

/**
 * The changes after `seq` that `grant` sees, without moving anything: what a socket replays.
 * `readTo` is how far the read reached.
 *
 * Sockets of one agent that replay from one place at once (a crowd of them reconnecting after
 * a restart) share one read. A read is shared only until the agent's feed is next signalled (a
 * change committed, here or in another process): a socket asking after that must see the
 * change, so it reads for itself; one that joined before hears the signal itself (the socket
 * door listens before it reads) and reads again.
 */
export function visibleChangesAfter(
  services: Services,
  agentId: string,
  grant: TokenGrant | null,
  seq: number,
  limit: number,
): Promise<VisibleChanges> {
  const db = services.db();
  // Inside a request's transaction a read is its own (on PGlite it holds the one connection).
  if (db !== services.driver) return visibleChanges(db, agentId, grant, seq, limit);
  let out = replaysOut.get(services);
  if (!out) replaysOut.set(services, (out = new Map()));
  const key = `${agentId} ${grant?.workspaceId ?? ''} ${seq} ${limit}`;
  const shared = out.get(key);
  if (shared) return shared;
  const read = visibleChanges(db, agentId, grant, seq, limit);
  const flights = out;
  const end = () => {
    if (flights.get(key) === read) flights.delete(key);
    stopListening();
  };
  const stopListening = services.hub.onNextSignal(agentId, end);
  flights.set(key, read);
  read.then(end, end);
  return read;
}
