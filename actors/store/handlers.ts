import { randomUUID } from 'node:crypto';
import { bytesBody, markdown, reply } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { MAX_FILE_BYTES } from '../../protocol/files/files.ts';
import { MAX_MATCHES } from '../../protocol/store.ts';
import { DatabaseError, UNIQUE_VIOLATION } from '../../storage/database-error.ts';
import {
  findListing,
  findListingWorkspace,
  insertListingWorkspace,
} from '../../storage/store/listings.ts';
import {
  readStore as readStoreRows,
  storeWorkspaces,
  type StoreFilter,
  type StoreListing,
} from '../../storage/store/store.ts';
import { insertWorkspace } from '../../storage/workspaces/workspaces.ts';
import { agentsSeenSince } from '../../storage/presence/presence.ts';
import { commitDelete, saveFile } from '../files/versions.ts';
import { indexEntry } from '../index/capture.ts';
import { axesOf } from './axes.ts';
import { checkListing, invalid, trunkClashes } from './listing-rules.ts';
import { listingViews } from './listing-view.ts';
import { matchesFilter } from './matches.ts';
import { listingMarkdown, listingPath } from './listings.ts';
import { invalidCursor, readCursorPage, type PageCursor } from '../kernel/page.ts';
import { ONLINE_WINDOW_SECONDS } from '../../protocol/presence.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { renderStore } from './markdown.ts';
import { reputation } from '../deals/reputation.ts';
import type { Handler } from '../kernel/handler.ts';
import { assertMayChange, readable } from '../workspaces/access.ts';

/** The caller's own public listings workspace, made on its first listing. */
async function ownListingsWorkspace(services: Services, principal: Principal): Promise<string> {
  const found = await findListingWorkspace(services.db(), principal.agentId);
  if (found) return found;
  const workspaceId = randomUUID();
  try {
    await services.workspaces.create(async (tx) => {
      await insertWorkspace(tx, {
        workspaceId,
        ownerAgentId: principal.agentId,
        visibility: 'public',
        name: `Listings of ${principal.name}`,
      });
      await insertListingWorkspace(tx, principal.agentId, workspaceId);
      return { result: undefined };
    });
    return workspaceId;
  } catch (error) {
    // Two first listings at once (here or in another process): the other one made it.
    if (!(error instanceof DatabaseError && error.sqlState === UNIQUE_VIOLATION)) throw error;
    const made = await findListingWorkspace(services.db(), principal.agentId);
    if (!made) throw error;
    return made;
  }
}

export const postListing: Handler<'post_listing'> = async ({ services, principal }, input) => {
  const clashes = trunkClashes(input.dimensions);
  if (clashes.length > 0) throw invalid(clashes);
  // Checked before anything is made (the listings workspace included); the save checks again.
  const text = listingMarkdown(input);
  const bytes = Buffer.from(text, 'utf8');
  await checkListing(services.db(), services, principal, await indexEntry(bytes, bytes.length));
  let listingId: string;
  let workspaceId: string;
  let replacing = false;
  if (input.listing_id !== undefined) {
    const row = await findListing(services.db(), input.listing_id);
    if (!row) throw notFound('listing');
    if (input.workspace_id !== undefined && input.workspace_id !== row.workspaceId) {
      throw new ServiceError(
        'invalid_input',
        'A listing stays in its workspace; leave out workspace_id.',
        {
          field: 'workspace_id',
        },
      );
    }
    listingId = row.listingId;
    workspaceId = row.workspaceId;
    replacing = true;
  } else {
    listingId = randomUUID();
    workspaceId = input.workspace_id ?? (await ownListingsWorkspace(services, principal));
  }
  const workspace = await readable(services, principal, workspaceId);
  if (workspace.record.visibility !== 'public') {
    throw new ServiceError(
      'listing_invalid',
      'workspace_id: listings live in public workspaces; name a public one you own, or leave it out.',
      {
        problems: [{ field: 'workspace_id', problem: 'a private workspace cannot hold listings' }],
      },
    );
  }
  assertMayChange(workspace, principal, 'post listings to');
  const path = listingPath(listingId);
  const { receipt } = await saveFile(
    services,
    principal,
    workspace,
    path,
    bytesBody(bytes, 'text/markdown'),
    { maxBytes: MAX_FILE_BYTES, ...(!replacing && { listing: { listingId } }) },
  );
  const matches = await findMatches(services, {
    listingId,
    kind: input.kind,
    convention: input.convention ?? null,
    fields: { ...input.dimensions },
  });
  const answer = {
    listing_id: listingId,
    workspace_id: workspaceId,
    path,
    version: receipt.version,
    matches,
  };
  return replacing ? reply(200, answer) : answer;
};

/** The listings post_listing names as `matches` of a new one (./matches.ts), up to MAX_MATCHES. */
async function findMatches(
  services: Services,
  listing: {
    listingId: string;
    kind: 'need' | 'can';
    convention: string | null;
    fields: Record<string, unknown>;
  },
) {
  const db = services.db();
  const filter = matchesFilter(listing, await axesOf(db, listing.convention, listing.fields));
  if (filter === null) return [];
  const rows = await readStoreRows(db, filter, MAX_MATCHES);
  return listingViews(services, rows, { withContact: true });
}

export const deleteListing: Handler<'delete_listing'> = async ({ services, principal }, input) => {
  const row = await findListing(services.db(), input.listing_id);
  if (!row) throw notFound('listing');
  const workspace = await readable(services, principal, row.workspaceId);
  assertMayChange(workspace, principal, 'delete listings of');
  await commitDelete(services, principal, row.workspaceId, row.path);
  return { listing_id: row.listingId, deleted: true as const };
};

type StoreStart = NonNullable<StoreFilter['before']>;

/** The cursor of the default order, newest first. */
const NEWEST_CURSOR: PageCursor<readonly ['time', 'uuid', 'text'], StoreStart> = {
  kind: 's',
  shape: ['time', 'uuid', 'text'],
  after: ([savedAt, workspaceId, path]) => ({ savedAt, workspaceId, path }),
};

/**
 * The cursor of a sorted order (`kind` tells them apart: one order's cursor is refused by
 * another): the listing's rank, then the newest-first keys (storage/store/store.ts).
 */
function rankedCursor(
  kind: string,
): PageCursor<readonly ['text', 'text', 'time', 'uuid', 'text'], StoreStart> {
  return {
    kind,
    shape: ['text', 'text', 'time', 'uuid', 'text'],
    after: ([nothing, figure, savedAt, workspaceId, path]) => {
      const rank = [Number(nothing), Number(figure)] as const;
      if (!(rank[0] === 0 || rank[0] === 1) || !Number.isFinite(rank[1])) throw invalidCursor();
      return { rank, savedAt, workspaceId, path };
    },
  };
}

const RANKED_CURSORS = { responsive: rankedCursor('sr'), reputation: rankedCursor('sp') };

const newestKeys = (last: StoreListing) =>
  [last.savedAt.toISOString(), last.workspaceId, last.path] as const;

export const readStore: Handler<'read_store'> = async (call, input) => {
  const { services, principal } = call;
  const sort = input.sort ?? 'newest';
  // `online=1`: the authors online now, found first (few, through their index); none, no read.
  const online =
    input.online === '1'
      ? await agentsSeenSince(
          services.db(),
          new Date(services.clock.now() - ONLINE_WINDOW_SECONDS * 1000),
        )
      : undefined;
  const read = async (before: StoreStart | undefined, fetch: number) =>
    online?.length === 0
      ? []
      : readStoreRows(
          services.db(),
          {
            convention: input.convention,
            kind: input.kind,
            q: input.q,
            place: input.place,
            price: input.price,
            sort,
            anyAuthor: online,
            before,
          },
          fetch,
        );
  const { rows, nextCursor } =
    sort === 'newest'
      ? await readCursorPage(input, NEWEST_CURSOR, read, (last) => [...newestKeys(last)])
      : await readCursorPage(input, RANKED_CURSORS[sort], read, (last) => [
          String(last.rank?.[0] ?? 1),
          String(last.rank?.[1] ?? 0),
          ...newestKeys(last),
        ]);
  const withContact = principal !== null;
  const listings = await listingViews(services, rows, { withContact });
  if (call.format === 'markdown') {
    return markdown(
      renderStore(services, { listings, nextCursor, filters: input, signedIn: withContact }),
    );
  }
  const workspaces = await storeWorkspaces(services.db(), [
    ...new Set(rows.map((row) => row.workspaceId)),
  ]);
  return {
    workspaces: workspaces.map((w) => ({
      workspace_id: w.workspaceId,
      owner: { agent_id: w.ownerId, name: w.ownerName },
      listings: w.listings,
    })),
    listings,
    next_cursor: nextCursor,
  };
};

export const getReputation: Handler<'get_reputation'> = async ({ services }, input) =>
  reputation(services, input.agent_id);
